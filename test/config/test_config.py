"""Configuration: a Go megamon config file loads unchanged; bad values are refused with one
message naming the key and the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from megamon.config import Config, ConfigMapRef, load_config, parse_config
from megamon.errors import ConfigError

GO_CONFIG = b"""{
  "MetricsPrefix": "megamon.alpha",
  "AggregationIntervalSeconds": 3,
  "ReportConfigMapRef": {"Namespace": "megamon-system", "Name": "megamon-report"},
  "JobSetNodeEventsConfigMapRef": {"Namespace": "megamon-system", "Name": "x"},
  "JobSetEventsConfigMapRef": {"Namespace": "megamon-system", "Name": "y"},
  "DisableNodePoolJobLabelling": true,
  "EventsBucketName": "my-bucket",
  "GKE": {"ProjectID": "p", "ClusterLocation": "us-east5", "ClusterName": "c"},
  "UnknownCountThreshold": 0.1,
  "SliceEnabled": true
}"""


def test_a_go_megamon_config_loads_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    config = parse_config(GO_CONFIG, "config.json")
    assert config.metric_prefix == "megamon_alpha"
    assert config.AggregationIntervalSeconds == 3
    assert config.polling_interval_seconds == 3
    assert config.events_path == "megamon/clusters/c"
    assert config.UnknownCountThreshold == 0.1 and config.SliceEnabled
    assert "unknown key JobSetNodeEventsConfigMapRef ignored" in caplog.text
    assert "unknown key JobSetEventsConfigMapRef ignored" in caplog.text


def test_keys_match_case_insensitively_as_in_go() -> None:
    config = parse_config(
        b'{"metricsprefix": "m", "reportconfigmapref": {"namespace": "a", "NAME": "b"},'
        b' "gke": {"projectid": "p"}}',
        "c.json",
    )
    assert config.MetricsPrefix == "m"
    assert config.ReportConfigMapRef == ConfigMapRef(Namespace="a", Name="b")
    assert config.GKE.ProjectID == "p"


def test_defaults() -> None:
    config = Config()
    assert (config.MetricsPrefix, config.AggregationIntervalSeconds, config.Exporters) == (
        "megamon",
        10,
        [],
    )
    assert config.SliceOwnerMapConfigMapRef == ConfigMapRef(
        Namespace="megamon-system", Name="megamon-slice-owner-map"
    )
    assert config.EventsLocalDir == "./megamon-data" and config.DisableNodePoolJobLabelling
    assert (config.MetricsAddr, config.ProbeAddr) == (":8080", ":8081")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            b'{"AggregationIntervalSeconds": "10"}',
            "AggregationIntervalSeconds: Input should be a valid integer",
        ),
        (
            b'{"AggregationIntervalSeconds": 0}',
            "AggregationIntervalSeconds: Input should be greater than 0",
        ),
        (
            b'{"UnknownCountThreshold": 1.5}',
            "UnknownCountThreshold: Input should be less than or equal to 1",
        ),
        (b'{"Exporters": ["prometheus"]}', "Exporters: unknown exporter 'prometheus'"),
        (
            b'{"Exporters": ["gcs", "stdout", "gcs"]}',
            "Exporters: 'gcs' is listed twice (entries 0 and 2)",
        ),
        (
            b'{"MetricsPrefix": "1bad"}',
            "MetricsPrefix: '1bad' does not make a Prometheus metric name",
        ),
        (b'{"GKE": {"ProjectID": 7}}', "GKE.ProjectID: Input should be a valid string"),
        (
            b'{"AggregationIntervalSeconds": 1000000000000}',
            "AggregationIntervalSeconds: Input should be less than or equal to 86400",
        ),
        (
            b'{"AggregationIntervalSeconds": 1e12}',
            "AggregationIntervalSeconds: Input should be a valid integer",
        ),
        (
            b'{"PollingIntervalSeconds": 86401}',
            "PollingIntervalSeconds: Input should be less than or equal to 86400",
        ),
        (
            b'{"NodeUnknownGracePeriodSeconds": 99999999999}',
            "NodeUnknownGracePeriodSeconds: Input should be less than or equal to 604800",
        ),
        (b'{"OTLPTimeoutSeconds": 0}', "OTLPTimeoutSeconds: Input should be greater than 0"),
        (
            b'{"OTLPEndpoint": "localhost:4318"}',
            "OTLPEndpoint: 'localhost:4318' is not an http:// or https:// URL",
        ),
        (b"", "the configuration file is empty"),
        (b" \n", "the configuration file is empty"),
        (
            b'{"EventBucketName": "b"}',
            "unknown key EventBucketName: did you mean EventsBucketName?",
        ),
        (
            b'{"GKE": {"ClusterNme": "c"}}',
            "unknown key GKE.ClusterNme: did you mean GKE.ClusterName?",
        ),
        (b'{"EnableSimulation": "yes"}', "EnableSimulation: Input should be a valid boolean"),
        (b"[]", "the configuration must be a JSON object"),
        (b"{", "invalid JSON"),
    ],
)
def test_bad_values_are_refused_naming_key_and_reason(data: bytes, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "config.json")
    assert str(caught.value).startswith("config.json: ")
    assert message in str(caught.value)


def test_megamon_run_refuses_a_bad_config_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b'{"UnknownCountThreshold": -1}')
    done = subprocess.run(
        [sys.executable, "-m", "megamon", "run", "--config-path", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"megamon run: {path}: UnknownCountThreshold: Input should be greater than or equal "
        "to 0 (got -1)"
    )


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_config(tmp_path / "nope.json")


@pytest.mark.parametrize(
    ("data", "last_line"),
    [
        (
            b'{"EventBucketName": "my-bucket"}',
            "unknown key EventBucketName: did you mean EventsBucketName?",
        ),
        (
            b'{"AggregationIntervalSeconds": 1000000000000}',
            "AggregationIntervalSeconds: Input should be less than or equal to 86400 "
            "(got 1000000000000)",
        ),
    ],
)
def test_megamon_run_refuses_a_typo_and_an_unbounded_value_with_one_line(
    tmp_path: Path, data: bytes, last_line: str
) -> None:
    """A typo'd key would send history to the default place; an interval of 1e12 seconds
    would stop the loop thread: both refuse to start, exit 2, one line, no traceback."""
    path = tmp_path / "config.json"
    path.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "megamon", "run", "--config-path", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"megamon run: {path}: {last_line}"

"""Configuration: the Go megamon's JSON file, loaded unchanged (README, Configuration).

Keys are matched case-insensitively, as Go's ``encoding/json`` matches them; unknown keys are
warned about, not fatal. Values are checked strictly (Go does not turn ``"10"`` into 10 or
``10.5`` into an integer), and an invalid file is refused at start with one message naming
the key and the reason.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from megamon.errors import ConfigError

log = logging.getLogger(__name__)

DEFAULT_CONFIG_PATH = "/etc/megamon/config.json"
EXPORTER_STDOUT = "stdout"
EXPORTER_CONFIGMAP = "configmap"
EXPORTER_GCS = "gcs"
EXPORTERS = (EXPORTER_STDOUT, EXPORTER_CONFIGMAP, EXPORTER_GCS)


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="ignore")


class ConfigMapRef(_Section):
    """A namespaced name, as Go's ``types.NamespacedName``."""

    Namespace: str
    Name: str


class GKEConfig(_Section):
    """Which cluster's node pools to list; missing parts come from the metadata server."""

    ProjectID: str = ""
    ClusterLocation: str = ""
    ClusterName: str = ""
    Endpoint: str = ""

    def cluster_ref(self) -> str:
        return (
            f"projects/{self.ProjectID}/locations/{self.ClusterLocation}"
            f"/clusters/{self.ClusterName}"
        )


class Config(_Section):
    """Every setting of ``megamon run``, with the Go megamon's names and defaults."""

    MetricsPrefix: str = "megamon"
    AggregationIntervalSeconds: int = Field(10, gt=0)
    SnapshotIntervalSeconds: int = Field(900, ge=1, le=86_400)
    PollingIntervalSeconds: int = Field(0, ge=0)
    Exporters: list[str] = []
    ReportConfigMapRef: ConfigMapRef = ConfigMapRef(
        Namespace="megamon-system", Name="megamon-report"
    )
    SliceOwnerMapConfigMapRef: ConfigMapRef = ConfigMapRef(
        Namespace="megamon-system", Name="megamon-slice-owner-map"
    )
    EventsBucketName: str = ""
    EventsBucketPath: str = ""
    EventsLocalDir: str = "./megamon-data"
    DisableNodePoolJobLabelling: bool = True
    MetricsAddr: str = ":8080"
    ProbeAddr: str = ":8081"
    EnableLeaderElection: bool = False
    SecureMetrics: bool = False
    MetricsCertDir: str = ""
    """Where the certificate for secure ``/metrics`` lives; empty: a self-signed one."""
    MetricsCertName: str = "tls.crt"
    MetricsKeyName: str = "tls.key"
    EnableHTTP2: bool = False
    EnableSimulation: bool = False
    GKE: GKEConfig = GKEConfig()
    UnknownCountThreshold: float = Field(1.0, ge=0.0, le=1.0)
    NodeUnknownGracePeriodSeconds: int = Field(180, ge=0)
    SliceEnabled: bool = False
    LeaderWorkerSetSupport: bool = False

    @field_validator("MetricsPrefix")
    @classmethod
    def _prefix_is_a_metric_name(cls, value: str) -> str:
        name = value.replace(".", "_")
        if (
            not name
            or not (name[0].isalpha() or name[0] == "_")
            or not all(c.isascii() and (c.isalnum() or c == "_") for c in name)
        ):
            raise ValueError(f"{value!r} does not make a Prometheus metric name")
        return value

    @field_validator("Exporters")
    @classmethod
    def _known_exporters(cls, value: list[str]) -> list[str]:
        for name in value:
            if name not in EXPORTERS:
                raise ValueError(f"unknown exporter {name!r} (known: {', '.join(EXPORTERS)})")
        return value

    @property
    def metric_prefix(self) -> str:
        """``MetricsPrefix`` with dots as underscores: ``megamon.alpha`` → ``megamon_alpha``."""
        return self.MetricsPrefix.replace(".", "_")

    @property
    def metrics_cert_files(self) -> tuple[str, str] | None:
        """The certificate and key for secure ``/metrics``; None: a self-signed certificate."""
        if not self.MetricsCertDir:
            return None
        directory = Path(self.MetricsCertDir)
        return str(directory / self.MetricsCertName), str(directory / self.MetricsKeyName)

    @property
    def polling_interval_seconds(self) -> int:
        return self.PollingIntervalSeconds or self.AggregationIntervalSeconds

    @property
    def events_path(self) -> str:
        """``EventsBucketPath``, defaulting to ``megamon/clusters/<ClusterName>``."""
        return self.EventsBucketPath or f"megamon/clusters/{self.GKE.ClusterName}"


def _canonical_keys(raw: dict[str, Any], model: type[BaseModel], where: str) -> dict[str, Any]:
    """``raw`` with keys renamed to the model's field names, matched case-insensitively."""
    fields = {name.lower(): name for name in model.model_fields}
    result: dict[str, Any] = {}
    for key, value in raw.items():
        name = fields.get(key.lower())
        if name is None:
            log.warning("config: unknown key %s%s ignored", where, key)
            continue
        annotation = model.model_fields[name].annotation
        nested = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        if nested and isinstance(value, dict):
            assert isinstance(annotation, type)
            result[name] = _canonical_keys(value, annotation, f"{where}{name}.")
        else:
            result[name] = value
    return result


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    key = ".".join(str(part) for part in first["loc"]) or "(top level)"
    reason = first["msg"].removeprefix("Value error, ")
    if "input" in first and not isinstance(first["input"], dict):
        reason += f" (got {orjson.dumps(first['input']).decode()[:80]})"
    return f"{key}: {reason}"


def parse_config(data: bytes, source: str) -> Config:
    """The configuration in ``data``; ``source`` names the file in error messages."""
    try:
        raw = orjson.loads(data) if data.strip() else {}
    except orjson.JSONDecodeError as err:
        raise ConfigError(f"{source}: invalid JSON: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the configuration must be a JSON object")
    try:
        return Config.model_validate(_canonical_keys(raw, Config, ""))
    except ValidationError as err:
        raise ConfigError(f"{source}: {_describe(err)}") from None


def load_config(path: str | Path) -> Config:
    """The configuration file at ``path``, checked; ``ConfigError`` names what is wrong."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the configuration: {err.strerror}") from None
    return parse_config(data, str(path))

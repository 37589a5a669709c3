"""``megamon run`` as a real process against the emulators: the GKE emulator, the Kubernetes
emulator and fake-gcs-server. Tests write a config, start the process, scrape ``/metrics``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from prometheus_client.parser import text_string_to_metric_families

from megamon.config import parse_config
from megamon.domain.kinds import Kind
from megamon.stores.gcs import GcsObjects
from megamon.telemetry import Instruments
from test.crosssurface import check_history, dump, scrape_time
from test.summary.foldcheck import check_folds

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The value of the one series of ``name`` whose labels include ``labels``."""
    found = [v for (n, lab), v in samples.items() if n == name and set(labels.items()) <= set(lab)]
    if len(found) > 1:
        raise AssertionError(f"{name} {labels}: {len(found)} series match")
    return found[0] if found else None


class MegamonProcess:
    """One ``python -m megamon run`` with its own config; stopped with SIGTERM."""

    def __init__(self, workdir: Path, config: dict[str, Any], env: dict[str, str]) -> None:
        self.metrics_port = free_port()
        self.probe_port = free_port()
        config = {
            **config,
            "MetricsAddr": f"127.0.0.1:{self.metrics_port}",
            "ProbeAddr": f"127.0.0.1:{self.probe_port}",
        }
        self.config_path = workdir / f"config-{self.metrics_port}.json"
        self.config_path.write_bytes(orjson.dumps(config))
        self.log_path = workdir / f"megamon-{self.metrics_port}.log"
        self._env = {**os.environ, **env}
        self._process: subprocess.Popen[bytes] | None = None
        self.config = config
        self.last_scrape: str | None = None
        """``/metrics`` as it was just before a clean stop (the cross-surface check's)."""

    def start(self) -> MegamonProcess:
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "megamon",
                    "run",
                    "--config-path",
                    str(self.config_path),
                    "--log-level",
                    "debug",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env,
            )
        self.wait_for(lambda: self.get(self.probe_port, "/healthz")[0] == 200, "probes")
        return self

    def get(self, port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except OSError:
            return 0, ""

    def metrics(self) -> tuple[int, str]:
        return self.get(self.metrics_port, "/metrics")

    def scrape(self) -> Samples:
        status, body = self.metrics()
        assert status == 200, f"/metrics answered {status}: {body[:200]}"
        return parse(body)

    def wait_for(self, check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise AssertionError(f"megamon exited ({self._process.returncode}):\n{self.log()}")
            if check():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; megamon log:\n{self.log()[-4000:]}")

    def settle(self, check: Callable[[Samples], bool], what: str, timeout: float = 30.0) -> Samples:
        found: list[Samples] = []

        def ready() -> bool:
            status, body = self.metrics()
            if status != 200:
                return False
            found[:] = [parse(body)]
            return check(found[0])

        self.wait_for(ready, what, timeout)
        return found[0]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, kill: bool = False) -> int:
        """SIGTERM (a clean shutdown: the history flushed and snapshotted), after a last
        scrape; SIGKILL when ``kill``."""
        assert self._process is not None
        if not kill and self._process.poll() is None:
            status, body = self.metrics()
            self.last_scrape = body if status == 200 else None
        self._process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        return self._process.wait(timeout=20)


def check_bucket_history(processes: list[MegamonProcess], storage: Any, workdir: Path) -> bool:
    """The cross-surface check (``test.crosssurface``) on the history the processes wrote to
    their bucket, with the gauges of the last clean stop's scrape of a process that had
    published a report (a standby publishes none); nothing when they wrote no bucket.
    Whether there was a history to check."""
    published = [
        p for p in processes if p.last_scrape and "_last_report_timestamp_seconds " in p.last_scrape
    ]
    if not published:
        return False
    last = published[-1]
    config = parse_config(last.config_path.read_bytes(), str(last.config_path))
    if not config.EventsBucketName or config.EnableSimulation:
        return False
    objects = GcsObjects(storage, config.EventsBucketName, instruments=Instruments.unregistered())
    root = dump(objects, config.events_path, workdir / f"history-{last.metrics_port}")
    if not any(root.iterdir()):
        return False
    assert last.last_scrape is not None
    now = scrape_time(last.last_scrape, config.metric_prefix)
    check_history(
        root,
        now,
        metrics=last.last_scrape,
        cycle_ns=int(config.AggregationIntervalSeconds * 1_000_000_000),
        config=last.config_path,
        prefix=config.metric_prefix,
    )
    check_folds(root, [*Kind, *(d.kind for d in config.WorkloadKinds)], now)
    return True

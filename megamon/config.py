"""Configuration: the Go megamon's JSON file, loaded unchanged (README, Configuration).

Read as Go's ``encoding/json`` reads it into the Go megamon's defaults: keys match
case-insensitively, ``null`` leaves a setting at its default (a top-level ``null`` leaves them
all), and a section such as ``ReportConfigMapRef`` that names only some of its fields keeps
the defaults of the others. An empty file is refused, as Go refuses it. An unknown key is a
warning (Go ignores it) unless it is close to a known one — ``EventBucketName`` — which is
refused with "did you mean": a typo must not send history to the wrong place. Values are
checked strictly (Go does not turn ``"10"`` into 10 or ``10.5`` into an integer) and within
sane bounds, and an invalid file is refused at start with one message naming the key and the
reason.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from megamon.domain.descriptions import UNKNOWN_KEY_ERROR, WorkloadKindList
from megamon.domain.kinds import Kind
from megamon.domain.similar import fold as _fold
from megamon.domain.similar import similar_key
from megamon.errors import ConfigError

log = logging.getLogger(__name__)

DEFAULT_CONFIG_PATH = "/etc/megamon/config.json"
EXPORTER_STDOUT = "stdout"
EXPORTER_CONFIGMAP = "configmap"
EXPORTER_GCS = "gcs"
EXPORTER_OTLP = "otlp"
EXPORTERS = (EXPORTER_STDOUT, EXPORTER_CONFIGMAP, EXPORTER_GCS, EXPORTER_OTLP)

MAX_INTERVAL_SECONDS = 86_400
"""A day: an aggregation or polling interval longer than that is a typo, not a setting."""
MAX_GRACE_SECONDS = 7 * 86_400
"""A week of a node Unknown before it counts as not ready."""
MAX_OTLP_TIMEOUT_SECONDS = 300
UNKNOWN_STAYS_UNKNOWN = 0
"""``NodeUnknownGracePeriodSeconds`` 0: a node stays Unknown however long (the Go megamon)."""


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="ignore")


class ConfigMapRef(_Section):
    """A namespaced name, as Go's ``types.NamespacedName``; a file that names only one of
    the two keeps the default of the other (Go decodes into the default)."""

    Namespace: str = ""
    Name: str = ""


class GKEConfig(_Section):
    """Which cluster's node pools to list; missing parts come from the metadata server."""

    ProjectID: str = ""
    ClusterLocation: str = ""
    ClusterName: str = ""
    Endpoint: str = ""
    ComputeEndpoint: str = ""
    """Where Compute Engine's API is (the workload policies of Ironwood node pools); empty:
    Google's. Apart from ``Endpoint``, which may name a regional GKE endpoint."""

    def cluster_ref(self) -> str:
        return (
            f"projects/{self.ProjectID}/locations/{self.ClusterLocation}"
            f"/clusters/{self.ClusterName}"
        )


class Config(_Section):
    """Every setting of ``megamon run``, with the Go megamon's names and defaults."""

    MetricsPrefix: str = "megamon"
    AggregationIntervalSeconds: int = Field(10, gt=0, le=MAX_INTERVAL_SECONDS)
    SnapshotIntervalSeconds: int = Field(900, ge=1, le=86_400)
    PollingIntervalSeconds: int = Field(0, ge=0, le=MAX_INTERVAL_SECONDS)
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
    SecureMetrics: bool = True
    """The Go megamon's setting (its default, true) for controller-runtime's metrics server,
    which it never started: it never changed the ``/metrics`` served on ``MetricsAddr``, and
    it does not here either (docs/migrating.md). ``MetricsTLS`` is megamon's own."""
    MetricsTLS: bool = False
    """Serve ``/metrics`` over TLS, to bearer tokens the Kubernetes API authorises only."""
    MetricsCertDir: str = ""
    """Where the certificate for ``MetricsTLS`` lives; empty: a self-signed one."""
    MetricsCertName: str = "tls.crt"
    MetricsKeyName: str = "tls.key"
    EnableHTTP2: bool = False
    EnableSimulation: bool = False
    GKE: GKEConfig = GKEConfig()
    UnknownCountThreshold: float = Field(1.0, ge=0.0, le=1.0)
    NodeUnknownGracePeriodSeconds: int = Field(180, ge=0, le=MAX_GRACE_SECONDS)
    """How long a node may be Unknown before it counts as not ready; 0: Unknown stays
    Unknown, as in the Go megamon (docs/migrating.md)."""
    TrackSingleHostNodePools: bool = True
    """False: like the Go megamon, only node pools with a placement topology (multi-host)."""
    RecordFailedProvisioning: bool = True
    """False: like the Go megamon, a node pool in ERROR is only down (no ``failed`` state and
    no ``f`` event), so a history stays one the Go megamon summarizes."""
    RequireExactCount: bool = False
    """True: like the Go megamon, a resource is up only when its ready and Unknown units are
    exactly the expected count, so a surge upgrade's extra node marks its pool down."""
    OTLPEndpoint: str = ""
    """Where the ``otlp`` exporter pushes (OTLP/HTTP base URL, ``/v1/metrics`` is added);
    empty: ``OTEL_EXPORTER_OTLP_ENDPOINT``, else ``http://localhost:4318``."""
    OTLPTimeoutSeconds: int = Field(10, gt=0, le=MAX_OTLP_TIMEOUT_SECONDS)
    SliceEnabled: bool = False
    LeaderWorkerSetSupport: bool = False
    WorkloadKinds: WorkloadKindList = []
    """Described kinds to track (docs/kinds.md): descriptions, or names of shipped ones."""
    PerResourceSeries: list[str] | None = None
    """The series budget: the kinds (metric infixes: ``nodepool``, ``jobset``, a described
    kind's noun) whose per-resource series are published; ``null`` (the default): every kind,
    as the Go megamon; ``[]``: fleet-wide series only (histograms, chip figures)."""

    @model_validator(mode="after")
    def _budget_names_kinds(self) -> Config:
        if self.PerResourceSeries is None:
            return self
        known = [kind.value for kind in Kind] + [d.Noun for d in self.WorkloadKinds]
        for name in self.PerResourceSeries:
            if name not in known:
                raise ValueError(
                    f"PerResourceSeries: {name!r} is not a kind (known: {', '.join(known)})"
                )
        return self

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
        """Each a known exporter, each once: a second ``gcs`` would archive every report
        twice, and a repeated name is more likely a typo for a missing one."""
        first: dict[str, int] = {}
        for index, name in enumerate(value):
            if name not in EXPORTERS:
                raise ValueError(f"unknown exporter {name!r} (known: {', '.join(EXPORTERS)})")
            if name in first:
                raise ValueError(f"{name!r} is listed twice (entries {first[name]} and {index})")
            first[name] = index
        return value

    @field_validator("OTLPEndpoint")
    @classmethod
    def _endpoint_is_a_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    @property
    def metric_prefix(self) -> str:
        """``MetricsPrefix`` with dots as underscores: ``megamon.alpha`` → ``megamon_alpha``."""
        return self.MetricsPrefix.replace(".", "_")

    @property
    def metrics_cert_files(self) -> tuple[str, str] | None:
        """The certificate and key for ``MetricsTLS``; None: a self-signed certificate."""
        if not self.MetricsCertDir:
            return None
        directory = Path(self.MetricsCertDir)
        return str(directory / self.MetricsCertName), str(directory / self.MetricsKeyName)

    @property
    def polling_interval_seconds(self) -> int:
        return self.PollingIntervalSeconds or self.AggregationIntervalSeconds

    @property
    def events_path(self) -> str:
        """The objects' prefix in the bucket: ``EventsBucketPath`` (default
        ``megamon/clusters/<ClusterName>``) as the Go megamon trims it."""
        return bucket_prefix(self.EventsBucketPath or f"megamon/clusters/{self.GKE.ClusterName}")


def bucket_prefix(path: str) -> str:
    """The Go megamon's object prefix for ``EventsBucketPath``: one trailing ``/`` removed
    and nothing else (``strings.TrimSuffix``), so ``/a/b`` stays a different object than
    ``a/b`` and a switched megamon finds the history where the Go megamon wrote it."""
    return path.removesuffix("/")


_GO_ONLY_KEYS = frozenset({"optionalcontrollersuffix"})
"""Keys of the Go megamon's config that mean nothing here (controller-runtime names)."""


def _unknown_key(key: str, fields: dict[str, str], where: str, problems: list[str]) -> None:
    """Warn of a key Go would ignore, or refuse one that looks like a typo of a known key
    (added to ``problems``)."""
    if not where and _fold(key) in _GO_ONLY_KEYS:
        log.warning("config: key %s is the Go megamon's only; ignored", key)
        return
    close = similar_key(key, fields.values())
    if close is not None:
        problems.append(f"unknown key {where}{key}: did you mean {where}{close}?")
        return
    log.warning("config: unknown key %s%s ignored", where, key)


def _canonical_keys(
    raw: dict[str, Any],
    model: type[BaseModel],
    where: str,
    problems: list[str],
    base: BaseModel | None = None,
) -> dict[str, Any]:
    """``raw`` with keys renamed to the model's field names, matched as Go matches them.

    Like Go's decoder, which decodes into the defaults: a ``null`` leaves the setting as it
    was, and a section (a nested object) starts from the current value of its fields, so
    ``{"ReportConfigMapRef": {"Name": "r"}}`` keeps the default namespace.
    """
    fields = {_fold(name): name for name in model.model_fields}
    result: dict[str, Any] = {}
    for key, value in raw.items():
        name = fields.get(_fold(key))
        if name is None:
            _unknown_key(key, fields, where, problems)
            continue
        if value is None:  # Go leaves the field as it was, even after an earlier spelling
            continue
        annotation = model.model_fields[name].annotation
        nested = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        if nested and isinstance(value, dict):
            assert isinstance(annotation, type)
            current = getattr(base, name) if base is not None else None
            start = current.model_dump() if isinstance(current, BaseModel) else {}
            start.update(result.get(name, {}))
            start.update(_canonical_keys(value, annotation, f"{where}{name}.", problems, current))
            result[name] = start
        else:
            result[name] = value
    return result


def _describe(error: Any) -> str:
    """One line for one of pydantic's errors: the key, the reason, what was given; a kind
    description's mistyped key as the configuration's own are ("did you mean …?")."""
    key = ".".join(str(part) for part in error["loc"]) or "(top level)"
    if error["type"] == UNKNOWN_KEY_ERROR:
        where = key + "." if error["loc"] else ""
        context = error["ctx"]
        return f"unknown key {where}{context['key']}: did you mean {where}{context['close']}?"
    reason = error["msg"].removeprefix("Value error, ")
    if "input" in error and not isinstance(error["input"], dict):
        reason += f" (got {orjson.dumps(error['input'], default=str).decode()[:80]})"
    return f"{key}: {reason}"


def check_config(data: bytes, source: str) -> tuple[Config | None, list[str]]:
    """The configuration in ``data`` and every problem found in it, each one line naming
    ``source`` and the key; the configuration is ``None`` when there is any problem."""
    if not data.strip():
        return None, [f"{source}: the configuration file is empty (write {{}} for defaults)"]
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        return None, [f"{source}: invalid JSON: {err}"]
    if raw is None:  # Go decodes a top-level null as "nothing to change"
        raw = {}
    if not isinstance(raw, dict):
        return None, [f"{source}: the configuration must be a JSON object"]
    problems: list[str] = []
    canonical = _canonical_keys(raw, Config, "", problems, _DEFAULTS)
    config: Config | None = None
    try:
        config = Config.model_validate(canonical)
    except ConfigError as err:
        problems.append(str(err))
    except ValidationError as err:
        problems.extend(_describe(error) for error in err.errors())
    problems = [f"{source}: {problem}" for problem in problems]
    return (config if not problems else None), problems


def parse_config(data: bytes, source: str) -> Config:
    """The configuration in ``data``; ``source`` names the file in error messages (the
    first problem: ``megamon config check`` lists them all)."""
    config, problems = check_config(data, source)
    if problems:
        raise ConfigError(problems[0])
    assert config is not None
    return config


_DEFAULTS = Config()


def load_config(path: str | Path) -> Config:
    """The configuration file at ``path``, checked; ``ConfigError`` names what is wrong."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the configuration: {err.strerror}") from None
    return parse_config(data, str(path))

"""The fleet's Prometheus series, rendered from the latest report on every scrape.

The report is an immutable snapshot that already holds every figure (DESIGN §1): the
collector only turns it into metric families, so there are no module-global gauges to keep in
step with it, no stale series of a resource that left the fleet, and no lock. Rendering is
deliberately plain: one label dict per resource, shared by all of its samples (the
exposition and ``get_sample_value`` only read labels), and one ``Sample`` per value.

A scrape never fails because of one bad resource: it is left out entirely (none of its series
appear, so no dashboard sees half of it), a warning is logged the first time, and the rest of
the fleet is published. A standby replica publishes only ``build_info`` and ``leader 0``, so
that two replicas never both publish the fleet; before the first report the leader publishes
the same two.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.samples import Sample

from megamon.metrics import names
from megamon.records.kinds import Kind
from megamon.records.observations import Attrs, Observation
from megamon.records.reports import KindReport, Report
from megamon.records.summaries import Summary
from megamon.records.timestamps import NANOS_PER_SECOND

log = logging.getLogger("megamon.metrics")

_MAX_WARNED = 10_000
"""Distinct failures remembered for warn-once; past that the memory starts over."""

_NOUNS: dict[Kind, str] = {
    Kind.NODEPOOL: "node pool",
    Kind.JOBSET: "JobSet",
    Kind.JOBSET_NODES: "JobSet's nodes",
    Kind.SLICE: "slice",
    Kind.LEADERWORKERSET: "LeaderWorkerSet",
}


@dataclass(frozen=True, slots=True)
class BuildInfo:
    """What is running, published as ``<prefix>_build_info{version,commit,date} 1``."""

    version: str
    commit: str
    date: str


@dataclass(frozen=True, slots=True)
class _SummaryGauge:
    """One per-kind gauge read from a ``Summary`` field."""

    suffix: str
    help: str
    """HELP text; ``{noun}`` is replaced by the kind's noun."""
    value: Callable[[Summary], int]
    always: bool
    """Emitted even when zero (otherwise only when non-zero)."""
    scale: int
    """Divisor: ``NANOS_PER_SECOND`` for durations (ns → s), 1 for counts."""


def _duration(suffix: str, field: str, help: str, *, always: bool = False) -> _SummaryGauge:
    return _SummaryGauge(suffix, help, attrgetter(field), always, NANOS_PER_SECOND)


def _count(suffix: str, field: str, help: str) -> _SummaryGauge:
    return _SummaryGauge(suffix, help, attrgetter(field), True, 1)


_SUMMARY_GAUGES: tuple[_SummaryGauge, ...] = (
    _duration(names.UP_TIME, "up_time", "Total time the {noun} was up.", always=True),
    _duration(
        names.DOWN_TIME,
        "down_time",
        "Total time the {noun} was down, the time before its first up included.",
        always=True,
    ),
    _count(
        names.INTERRUPTION_COUNT,
        "interruption_count",
        "Interruptions of the {noun}: up to down transitions that were not expected.",
    ),
    _count(
        names.RECOVERY_COUNT,
        "recovery_count",
        "Recoveries of the {noun}: down to up transitions that ended an unexpected down period.",
    ),
    _duration(
        names.DOWN_TIME_INITIAL,
        "down_time_initial",
        "Time from the {noun}'s first observation to its first up (only when non-zero).",
    ),
    _duration(
        names.DOWN_TIME_BETWEEN_RECOVERY,
        "total_down_time_between_recovery",
        "Total time to recover of the {noun}: down periods ended by an up (only when non-zero).",
    ),
    _duration(
        names.DOWN_TIME_BETWEEN_RECOVERY_MEAN,
        "mean_down_time_between_recovery",
        "Mean time to recover (MTTR) of the {noun} (only when non-zero).",
    ),
    _duration(
        names.DOWN_TIME_BETWEEN_RECOVERY_LATEST,
        "latest_down_time_between_recovery",
        "Length of the {noun}'s latest down period ended by an up (only when non-zero).",
    ),
    _duration(
        names.UP_TIME_BETWEEN_INTERRUPTION,
        "total_up_time_between_interruption",
        "Total time between interruptions of the {noun} (only when non-zero).",
    ),
    _duration(
        names.UP_TIME_BETWEEN_INTERRUPTION_MEAN,
        "mean_up_time_between_interruption",
        "Mean time between interruptions (MTBI) of the {noun} (only when non-zero).",
    ),
    _duration(
        names.UP_TIME_BETWEEN_INTERRUPTION_LATEST,
        "latest_up_time_between_interruption",
        "Length of the {noun}'s latest up period ended by a down (only when non-zero).",
    ),
)

_UP_HELP = "1 if the {noun} is up (ready and not expected down), else 0."
_CHIPS_HELP = "TPU chips of the {noun} (only when known)."
_PROVISIONING_HELP = (
    "Time the {noun} took (success, failed) or has taken so far (provisioning) to first come up."
)


class _Gauge(GaugeMetricFamily):
    """A gauge family whose series may carry different label sets (empty attrs omitted)."""

    def add(self, labels: dict[str, str], value: float) -> None:
        self.samples.append(Sample(self.name, labels, value))


def _text(field: str, value: object) -> str:
    """``value`` if it is a string: anything else would break the exposition, not just a series."""
    if not isinstance(value, str):
        raise TypeError(f"{field} is {value!r}, not a string")
    return value


def attr_labels(attrs: Attrs) -> dict[str, str]:
    """The label set of a resource: its non-empty attrs, ``spot="true"`` only when spot."""
    labels: dict[str, str] = {}
    for field, key in names.ATTR_LABELS:
        value = getattr(attrs, field)
        if value is True:
            labels[key] = names.SPOT_TRUE
        elif value:
            labels[key] = _text(field, value)
    return labels


class _KindFamilies:
    """The families of one kind for one scrape, and how one resource is rendered into them."""

    def __init__(self, prefix: str, kind: Kind) -> None:
        noun = _NOUNS.get(kind, kind.value)

        def gauge(suffix: str, help: str) -> _Gauge:
            return _Gauge(names.kind_metric(prefix, kind.value, suffix), help.format(noun=noun))

        self.up = gauge(names.UP, _UP_HELP)
        self.chips = gauge(names.TPU_CHIP_COUNT, _CHIPS_HELP)
        self.provisioning = gauge(names.PROVISIONING_DURATION, _PROVISIONING_HELP)
        self.from_summary = tuple(
            (gauge(spec.suffix, spec.help), spec.value, spec.always, spec.scale)
            for spec in _SUMMARY_GAUGES
        )

    def all(self) -> list[_Gauge]:
        families = [self.up, *(entry[0] for entry in self.from_summary)]
        return [*families, self.chips, self.provisioning]

    def render(self, labels: dict[str, str], obs: Observation, summary: Summary | None) -> None:
        """Append the resource's samples; the provisioning sample, if any, comes last."""
        self.up.add(labels, 1.0 if obs.up else 0.0)
        chips = obs.attrs.tpu_chip_count
        if chips:
            self.chips.add(labels, chips / 1)
        if summary is None:
            return
        for family, value_of, always, scale in self.from_summary:
            value = value_of(summary)
            if value or always:
                family.add(labels, value / scale)
        state = summary.provisioning_state
        if state:
            seconds = summary.provisioning_duration / NANOS_PER_SECOND
            self.provisioning.add({**labels, names.LABEL_PROVISIONING_STATE: str(state)}, seconds)

    def discard(self, labels: dict[str, str]) -> None:
        """Remove the samples of a resource whose rendering failed half-way.

        They are the trailing samples carrying this very label dict: ``render`` shares one
        dict across the resource's samples and appends the provisioning sample (its own dict)
        last, after everything that could fail.
        """
        for family in self.all():
            samples = family.samples
            while samples and samples[-1].labels is labels:
                samples.pop()


def _always_leader() -> bool:
    return True


class ReportCollector:
    """A prometheus-client collector rendering ``latest()`` afresh on every ``collect()``.

    Register it in a private ``CollectorRegistry``. ``prefix`` is already a metric name part
    (``Config.metric_prefix``: ``megamon.alpha`` → ``megamon_alpha``).
    """

    def __init__(
        self,
        prefix: str,
        latest: Callable[[], Report | None],
        is_leader: Callable[[], bool] = _always_leader,
        *,
        build: BuildInfo,
    ) -> None:
        self._prefix = prefix
        self._latest = latest
        self._is_leader = is_leader
        self._build = build
        self._warned: set[str] = set()

    def describe(self) -> Iterator[Metric]:
        """Every family name this collector may emit, so the registry can refuse clashes."""
        yield from self._process_families()
        yield from self._freshness_families()
        yield self._scheduling_family()
        for kind in Kind:
            yield from _KindFamilies(self._prefix, kind).all()

    def collect(self) -> Iterator[Metric]:
        leader = self._call_is_leader()
        build_info, leader_family = self._process_families()
        build_info.add_metric([self._build.version, self._build.commit, self._build.date], 1.0)
        leader_family.add_metric([], 1.0 if leader else 0.0)
        yield build_info
        yield leader_family
        if not leader:
            return
        report = self._call_latest()
        if report is None:
            return
        yield from self._guarded("freshness", partial(self._freshness, report))
        for kind in Kind:
            yield from self._guarded(f"kind {kind.value}", partial(self._kind, report, kind))
        yield from self._guarded("scheduling", partial(self._scheduling, report))

    def _process_families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        build_info = GaugeMetricFamily(
            names.process_metric(self._prefix, names.BUILD_INFO),
            "The running megamon build; always 1.",
            labels=[names.LABEL_VERSION, names.LABEL_COMMIT, names.LABEL_DATE],
        )
        leader = GaugeMetricFamily(
            names.process_metric(self._prefix, names.LEADER),
            "1 if this replica leads and publishes the fleet's series, 0 on a standby.",
        )
        return build_info, leader

    def _freshness_families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        observed = GaugeMetricFamily(
            names.process_metric(self._prefix, names.LAST_OBSERVATION_TIMESTAMP),
            "Unix time of the last successful observation of each source.",
            labels=[names.LABEL_SOURCE],
        )
        reported = GaugeMetricFamily(
            names.process_metric(self._prefix, names.LAST_REPORT_TIMESTAMP),
            "Unix time at which the published report was generated.",
        )
        return observed, reported

    def _scheduling_family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(
            names.process_metric(self._prefix, names.NODEPOOL_JOB_SCHEDULED),
            "1 for each node pool running the leader pod of a JobSet's Job.",
            labels=[names.LABEL_NODEPOOL_NAME, names.LABEL_JOB_NAME, names.LABEL_JOBSET_NAME],
        )

    def _freshness(self, report: Report) -> list[GaugeMetricFamily]:
        observed, reported = self._freshness_families()
        for source, ns in report.observed_at.items():
            observed.add_metric([_text("source", source)], ns / NANOS_PER_SECOND)
        reported.add_metric([], report.generated_at / NANOS_PER_SECOND)
        return [observed, reported] if observed.samples else [reported]

    def _scheduling(self, report: Report) -> list[GaugeMetricFamily]:
        family = self._scheduling_family()
        for nodepool, job in report.scheduling.items():
            try:
                values = [
                    _text("node pool", nodepool),
                    _text("job name", job.job_name),
                    _text("JobSet name", job.jobset_name),
                ]
            except Exception as err:
                self._warn_once(f"scheduling {nodepool!r}", err)
                continue
            family.add_metric(values, 1.0)
        return [family] if family.samples else []

    def _kind(self, report: Report, kind: Kind) -> list[_Gauge]:
        families = _KindFamilies(self._prefix, kind)
        kind_report: KindReport = report.kind(kind)
        summaries = kind_report.summaries
        for key, obs in kind_report.observations.items():
            labels: dict[str, str] | None = None
            try:
                labels = attr_labels(obs.attrs)
                families.render(labels, obs, summaries.get(key))
            except Exception as err:
                if labels is not None:
                    families.discard(labels)
                self._warn_once(f"{kind.value} {key!r}", err)
        return [family for family in families.all() if family.samples]

    def _guarded(self, what: str, render: Callable[[], Sequence[Metric]]) -> Sequence[Metric]:
        """``render()``, or nothing (and a warning) if it fails: the scrape goes on."""
        try:
            return render()
        except Exception as err:
            self._warn_once(what, err)
            return []

    def _call_is_leader(self) -> bool:
        try:
            return bool(self._is_leader())
        except Exception as err:
            self._warn_once("is_leader()", err)
            return False

    def _call_latest(self) -> Report | None:
        try:
            return self._latest()
        except Exception as err:
            self._warn_once("latest()", err)
            return None

    def _warn_once(self, what: str, err: Exception) -> None:
        """Log a rendering failure at warning the first time, at debug afterwards."""
        if what in self._warned:
            log.debug("metrics: %s left out of the scrape again: %r", what, err)
            return
        if len(self._warned) >= _MAX_WARNED:
            self._warned.clear()
        self._warned.add(what)
        log.warning("metrics: %s left out of the scrape: %r", what, err, exc_info=err)

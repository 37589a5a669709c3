"""The fleet's Prometheus series, rendered from the latest report on every scrape.

The report is an immutable snapshot that already holds every figure (docs/architecture.md): the
collector only turns it into metric families, so there are no module-global gauges to keep in
step with it, no stale series of a resource that left the fleet, and no lock.

The emission rules — which series a resource has, and when — are ``_SUMMARY_GAUGES`` and
``_row_values``, and nothing else. A scrape turns each resource into one row: its label set,
one value per family of its kind (``None`` where it has no sample) and the sample line of
each. The families read their samples from those rows on demand: as UTF-8 lines for
``exposition`` (the fast encoder; a 65,000-node fleet is ~200,000 samples), or as ``Sample``
tuples for ``prometheus_client``. A row is kept to the next scrape, which reuses it while
the resource's observation and settled summary are the same objects, writing only the lines
of its running figures (up and down time, a provisioning going on) that changed; a label
set is escaped once and kept while its attrs stay the same.

A scrape never fails because of one bad resource: it is left out entirely (none of its series
appear, so no dashboard sees half of it), a warning is logged the first time, and the rest of
the fleet is published. A standby replica publishes only ``build_info`` and ``leader 0``, so
that two replicas never both publish the fleet; before the first report the leader publishes
the same two.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter
from typing import cast

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

from megamon.domain import distributions
from megamon.domain import labels as resource_states
from megamon.domain.distributions import Histogram, SeriesKey, Shape
from megamon.domain.kinds import Kind, kind_spec
from megamon.domain.observations import Attrs, Observation, WorkloadAttrs
from megamon.domain.reports import KindReport, Report
from megamon.domain.summaries import Summary
from megamon.domain.timestamps import NANOS_PER_SECOND, seconds
from megamon.publishing.metrics import exposition, maintenance, names
from megamon.summary.report import SummariesAt
from megamon.summary.summarizing import Settled

log = logging.getLogger(__name__)

_MAX_WARNED = 10_000
"""Distinct failures remembered for warn-once; past that the memory starts over."""

_WORKLOAD_FIELDS = ("workload_name", "workload_namespace", "workload_uid")
"""The ``Attrs`` fields of a described kind's name, namespace and UID; their label keys are
the kind's own (``KindSpec.workload_labels``)."""

_WORKLOAD_VALUES = attrgetter(*_WORKLOAD_FIELDS)
_NO_WORKLOAD = ("", "", "")


def _workload_values(attrs: Attrs) -> tuple[str, str, str]:
    """A described kind's name, namespace and UID; empty for the built-in kinds' ``Attrs``,
    which lack the fields (asking pydantic for a missing one raises, which at L cost a
    quarter of the render)."""
    if isinstance(attrs, WorkloadAttrs):
        values: tuple[str, str, str] = _WORKLOAD_VALUES(attrs)
        return values
    return _NO_WORKLOAD


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
    field: str
    """The ``Summary`` field it reads."""
    always: bool
    """Emitted even when zero (otherwise only when non-zero)."""
    scale: int
    """Divisor: ``NANOS_PER_SECOND`` for durations (ns → s), 1 for counts."""


def _duration(suffix: str, field: str, help: str, *, always: bool = False) -> _SummaryGauge:
    return _SummaryGauge(suffix, help, field, always, NANOS_PER_SECOND)


def _count(suffix: str, field: str, help: str) -> _SummaryGauge:
    return _SummaryGauge(suffix, help, field, True, 1)


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
_RESTARTS_HELP = (
    "Times the {noun} restarted, where megamon reads them; a JobSet's by kind of restart "
    "(jobset: status.restarts, job: single-Job restarts, in-place)."
)
_SURPLUS_HELP = (
    "Nodes of the {noun} beyond the expected count (a surge upgrade's); only when non-zero."
)
_PROVISIONING_HELP = (
    "Time the {noun} took (success, failed) or has taken so far (provisioning) to first come up."
)


def _text(field: str, value: object) -> str:
    """``value`` if it is a string: anything else would break the exposition, not just a series."""
    if not isinstance(value, str):
        raise TypeError(f"{field} is {value!r}, not a string")
    return value


def attr_labels(
    attrs: Attrs, workload_labels: tuple[str, str, str] = ("", "", "")
) -> dict[str, str]:
    """The label set of a resource: its non-empty attrs, ``spot="true"`` only when spot; a
    described kind's name, namespace and UID under the label keys its description names."""
    labels: dict[str, str] = {}
    for field, key in names.ATTR_LABELS:
        value = getattr(attrs, field)
        if value is True:
            labels[key] = names.SPOT_TRUE
        elif value:
            labels[key] = _text(field, value)
    fields = zip(_WORKLOAD_FIELDS, _workload_values(attrs), workload_labels, strict=True)
    for field, value, key in fields:
        if value and key:
            labels[key] = _text(field, value)
    return labels


_ATTR_VALUES = attrgetter(*(field for field, _ in names.ATTR_LABELS))
"""Every attr that becomes a label, as one tuple: the key of the label-set cache."""


class _LabelSet:
    """One resource's labels, as a dict (for ``Sample``) and as exposition text (escaped once)."""

    __slots__ = ("_with_state", "mapping", "text")

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping
        self.text = exposition.label_text(mapping)
        self._with_state: dict[tuple[str, str], _LabelSet] = {}

    def with_state(self, state: str) -> _LabelSet:
        """These labels plus ``provisioning_state``."""
        return self.with_label(names.LABEL_PROVISIONING_STATE, state)

    def with_label(self, key: str, value: str) -> _LabelSet:
        """These labels plus ``key=value`` (built once per resource and value)."""
        found = self._with_state.get((key, value))
        if found is None:
            found = _LabelSet({**self.mapping, key: value})
            self._with_state[(key, value)] = found
        return found


def _row_values(
    obs: Observation, figures: tuple[int, ...] | None, state: str
) -> tuple[float | None, ...]:
    """The emission rules: the value of each of a resource's series, ``None`` if absent.

    ``figures`` are the summary's (``_figures``: each ``_SUMMARY_GAUGES`` field, then the
    provisioning duration), ``None`` without a summary; ``state`` its provisioning state.
    In family order (``_kind_families``): ``up``; each ``_SUMMARY_GAUGES`` entry (when there
    is a summary, and the value is non-zero or always emitted); chips (when known); the
    provisioning duration (when there is a provisioning state, which becomes its label);
    surplus nodes (when non-zero). The table keeps the columns its kind has
    (``_KindTable._rebuild``); restarts, one sample per kind of restart, are its own
    (``_restart_samples``).
    """
    values: list[float | None] = [1.0 if obs.up else 0.0]
    if figures is None:
        values.extend(_NO_SUMMARY)
    else:
        for value, rule in zip(figures, _SUMMARY_RULES, strict=False):
            values.append(_gauge_value(value, rule))
    chips = obs.attrs.tpu_chip_count
    values.append(chips / 1 if chips else None)
    values.append(None if figures is None else _provisioning(state, figures[-1]))
    values.append(float(obs.surplus) if obs.surplus else None)
    return tuple(values)


def _gauge_value(value: int, rule: tuple[bool, int]) -> float | None:
    """A ``_SUMMARY_GAUGES`` entry's value: scaled, or ``None`` when zero and not always."""
    always, scale = rule
    return value / scale if value or always else None


def _provisioning(state: str, duration_ns: int) -> float | None:
    """The provisioning duration's value: only with a provisioning state (its label)."""
    return duration_ns / NANOS_PER_SECOND if state else None


_restarts_of = attrgetter("restart_counts", "restarts")
"""What a resource's restart samples are made of, besides its labels."""


def _restart_samples(labels: _LabelSet, obs: Observation) -> list[tuple[_LabelSet, float]]:
    """The restarts of a resource: one sample per kind of restart (``kind``) where the kind
    tells them apart (JobSets), else its one restart count (a described kind's)."""
    if obs.restart_counts:
        return [
            (labels.with_label(names.LABEL_RESTART_KIND, kind), float(count))
            for kind, count in obs.restart_counts
        ]
    return [] if obs.restarts is None else [(labels, float(obs.restarts))]


_figures = attrgetter(*(spec.field for spec in _SUMMARY_GAUGES), "provisioning_duration")
"""The figures of a ``Summary`` that ``_row_values`` reads, the provisioning state aside."""
_SUMMARY_RULES = tuple((spec.always, spec.scale) for spec in _SUMMARY_GAUGES)
_NO_SUMMARY = (None,) * len(_SUMMARY_GAUGES)
_RUNNING_FIELDS = ("up_time", "down_time", "provisioning_duration")
"""The ``Summary`` fields that grow with ``now`` alone (the open period, a provisioning
going on): between two scrapes, mostly the only ones that changed."""
assert tuple(spec.field for spec in _SUMMARY_GAUGES[:2]) == _RUNNING_FIELDS[:2]
_running_fields = attrgetter(*_RUNNING_FIELDS)
_settled_fields = attrgetter(
    *(name for name in Summary.model_fields if name not in _RUNNING_FIELDS)
)
"""Every other field of a ``Summary``: equal, the row's other values are too."""


def _settled_figures(settled: Settled, running: tuple[int, int, int]) -> tuple[int, ...]:
    """``_figures(settled.at(now))`` without making the summary: ``running`` is
    ``settled.running(now)``, the figures it does not hold are its base's."""
    up, down, provisioning = running
    return (up, down, *_figures(settled.base)[2:-1], provisioning)


def _kind_families(prefix: str, kind: Kind) -> list[tuple[str, str]]:
    """(name, help) of every family of ``kind``, in exposition order."""
    spec = kind_spec(kind)
    noun = spec.noun or kind.value
    specs = [
        (names.UP, _UP_HELP),
        *((spec.suffix, spec.help) for spec in _SUMMARY_GAUGES),
        (names.TPU_CHIP_COUNT, _CHIPS_HELP),
        (names.PROVISIONING_DURATION, _PROVISIONING_HELP),
        *([(names.SURPLUS_NODES, _SURPLUS_HELP)] if spec.counts_nodes else []),
        *([(names.RESTARTS, _RESTARTS_HELP)] if spec.restarts else []),
    ]
    return [
        (names.kind_metric(prefix, kind.value, suffix), help.format(noun=noun))
        for suffix, help in specs
    ]


_PROVISIONING = len(_SUMMARY_GAUGES) + 2
"""The column of the provisioning duration, the one family with a label of its own."""
_SURPLUS = _PROVISIONING + 1
"""The last column: a kind that does not count nodes has none."""


_RUNNING_COLUMNS = (1, 2, _PROVISIONING)
"""The columns of ``_RUNNING_FIELDS``: up time, down time, the provisioning duration."""
assert all(_SUMMARY_RULES[column - 1] == (True, NANOS_PER_SECOND) for column in (1, 2))


class _Fixed:
    """What a resource's series owe to its observation and settled summary: kept, as the same
    object, for as long as both are the same."""

    __slots__ = (
        "allocatable",
        "labels",
        "lines",
        "obs",
        "restart_lines",
        "restarts",
        "source",
        "state",
        "values",
    )

    def __init__(  # noqa: PLR0917 - one part of a row, built in one place
        self,
        obs: Observation,
        labels: _LabelSet,
        state: str,
        source: object,
        values: tuple[float | None, ...],
        lines: tuple[bytes | None, ...],
        restarts: tuple[tuple[_LabelSet, float], ...],
        restart_lines: tuple[bytes, ...],
    ) -> None:
        self.obs = obs
        self.labels = labels
        self.state = state
        """The provisioning state: the label of the provisioning duration's sample."""
        self.source = source
        """What the settled columns were written from: the summary's ``Settled`` object,
        or its ``_settled_fields``; ``None`` without a summary."""
        self.values = values
        """One value per family of the kind, ``None`` where the resource has no sample (the
        running columns' as of when it was made: ``_Row.value`` has the current ones)."""
        self.lines = lines
        """The sample line of each value, ``None`` with it (the running columns' are the
        row's own)."""
        self.restarts = restarts
        self.restart_lines = restart_lines
        self.allocatable: bytes | None = None
        """The line of a node pool's allocatable chips, once written (``_allocatable``)."""


class _Row:
    """One resource's series at one scrape: its fixed part, and its running figures.

    Kept until the next scrape, which reuses what did not change. While the observation is
    the same object (the observers hand back the same one while its inputs are unchanged)
    and the summary's settled part is the same, the fixed part is kept as it is, and only
    the running figures are looked at: a line is written for a value that changed. Between
    two scrapes of a large fleet that is most resources: only the open period's up or down
    time grew.
    """

    __slots__ = ("fixed", "running", "running_lines")

    def __init__(
        self, fixed: _Fixed, running: tuple[int, int, int], running_lines: tuple[bytes | None, ...]
    ) -> None:
        self.fixed = fixed
        self.running = running
        """``_running_fields`` of the summary (zeros without one)."""
        self.running_lines = running_lines
        """The lines of the running columns (``_RUNNING_COLUMNS``), ``None`` where absent."""

    def value(self, column: int) -> float | None:
        """Column ``column``'s value, ``None`` where the resource has no sample."""
        fixed = self.fixed
        if column not in _RUNNING_COLUMNS or fixed.source is None:
            return fixed.values[column]
        up, down, provisioning = self.running
        if column == _PROVISIONING:
            return _provisioning(fixed.state, provisioning)
        return _gauge_value(
            up if column == _RUNNING_COLUMNS[0] else down, _SUMMARY_RULES[column - 1]
        )


_NOT_RUNNING = (0, 0, 0)


def _nothing_settled(key: str) -> Settled | None:
    """``SummariesAt.settled`` of a report whose summaries were all made up front."""
    return None


class _KindTable:
    """Every resource of one kind for one scrape, as rows (``_Row``); a family reads its
    column of lines, or of values for ``prometheus_client``. ``previous`` is the table of
    the last scrape, whose rows are reused where nothing changed."""

    def __init__(self, prefix: str, kind: Kind, previous: Mapping[str, _Row]) -> None:
        self.families = _kind_families(prefix, kind)
        spec = kind_spec(kind)
        self._restarts = self.families.pop() if spec.restarts else None
        """(name, help) of the restarts family, rendered from its own samples."""
        self._width = len(self.families)
        """The columns the kind has: all, or all but the last (surplus nodes)."""
        self._names = [name for name, _ in self.families]
        self._previous = previous
        self.rows: dict[str, _Row] = {}
        self._columns: list[tuple[bytes | None, ...]] | None = None

    def add_all(
        self,
        observations: Mapping[str, Observation],
        summaries: Mapping[str, Summary],
        labels_of: Callable[[Attrs], _LabelSet],
        failed: Callable[[str, Exception], None],
    ) -> None:
        """Add every resource's row; one that raises is left out entirely and handed to
        ``failed``.

        The last scrape's row is carried on (its running figures brought up to date) while
        the observation is the same object and the summary's settled part is the same: the
        same ``Settled`` object where the report makes summaries when read (``SummariesAt``:
        then no summary is made at all), else equal settled fields. That is most of a large
        fleet's scrape, so this loop does no more than decide it; ``_rebuild`` does the
        rest."""
        lazy = summaries if isinstance(summaries, SummariesAt) else None
        now = lazy.now if lazy is not None else 0
        settled_of = lazy.settled if lazy is not None else _nothing_settled
        previous_of, rows = self._previous.get, self.rows
        source: object
        for key, obs in observations.items():
            try:
                previous, settled = previous_of(key), settled_of(key)
                summary: Summary | None = None
                if settled is not None and settled.holds_at(now):
                    source, running = settled, settled.running(now)
                else:
                    summary = summaries.get(key)
                    if summary is None:
                        source, running = None, _NOT_RUNNING
                    else:
                        source, running = _settled_fields(summary), _running_fields(summary)
                if (
                    previous is not None
                    and previous.fixed.obs is obs
                    and (
                        previous.fixed.source is source
                        or (type(source) is tuple and previous.fixed.source == source)
                    )
                ):
                    if running != previous.running:
                        previous = self._ran_on(previous, running)
                    rows[key] = previous
                else:
                    rows[key] = self._rebuild(
                        key, obs, previous, (source, running, summary), labels_of
                    )
            except Exception as err:
                failed(key, err)

    def _rebuild(
        self,
        key: str,
        obs: Observation,
        previous: _Row | None,
        read: tuple[object, tuple[int, int, int], Summary | None],
        labels_of: Callable[[Attrs], _LabelSet],
    ) -> _Row:
        """A new row for ``key``: ``read`` is what ``add_all`` read of its summary (the
        source of its settled figures, its running figures, the summary if made). What did
        not change is taken from the last scrape's row: its labels (same attrs), the lines of
        equal values, its restart lines (same restarts)."""
        source, running, summary = read
        figures: tuple[int, ...] | None
        if isinstance(source, Settled):  # read without making the summary
            figures, state = _settled_figures(source, running), str(source.base.provisioning_state)
        else:  # the summary made up front (or none: a resource without one)
            figures = _figures(summary) if summary is not None else None
            state = str(summary.provisioning_state) if summary is not None else ""
        was = previous.fixed if previous is not None else None
        if was is not None and (was.obs.attrs is obs.attrs or was.obs.attrs == obs.attrs):
            labels = was.labels  # the same labels: lines of values unchanged are too
        else:
            labels, was = labels_of(obs.attrs), None
        if was is not None and _restarts_of(was.obs) == _restarts_of(obs):
            restarts, restart_lines = was.restarts, was.restart_lines
        else:
            restarts = tuple(_restart_samples(labels, obs)) if self._restarts else ()
            restart_lines = tuple(self._restart_lines(restarts))
        values = _row_values(obs, figures, state)[: self._width]
        lines = self._lines(labels, state, values, was if was and was.state == state else None)
        fixed = _Fixed(obs, labels, state, source, values, lines, restarts, restart_lines)
        return _Row(fixed, running, (lines[1], lines[2], lines[_PROVISIONING]))

    def _ran_on(self, row: _Row, running: tuple[int, int, int]) -> _Row:
        """``row`` with the running columns' new values, and lines where they changed (the
        values ``_row_values`` gives: up and down time always, the provisioning duration
        while the row has a provisioning state, which is unchanged)."""
        up, down, provisioning = running
        was_up, was_down, was_provisioning = row.running
        up_line, down_line, provisioning_line = row.running_lines
        fixed = row.fixed
        labels = fixed.labels
        if up != was_up:  # up and down time are always written (``_SUMMARY_GAUGES``)
            up_line = exposition.gauge_line(self._names[1], labels.text, up / NANOS_PER_SECOND)
        if down != was_down:
            down_line = exposition.gauge_line(self._names[2], labels.text, down / NANOS_PER_SECOND)
        if provisioning != was_provisioning:
            value = _provisioning(fixed.state, provisioning)
            provisioning_line = self._line(_PROVISIONING, labels, fixed.state, value)
        return _Row(fixed, running, (up_line, down_line, provisioning_line))

    def _lines(
        self,
        labels: _LabelSet,
        state: str,
        values: tuple[float | None, ...],
        was: _Fixed | None = None,
    ) -> tuple[bytes | None, ...]:
        """The line of each value; ``was``: a fixed part with the same labels and state,
        whose line of an equal value is the same line (a resource that gained an event
        changed a few of its figures, not all)."""
        if was is None:
            text, line = labels.text, exposition.gauge_line
            lines = [
                None if value is None else line(name, text, value)
                for name, value in zip(self._names, values, strict=True)
            ]
            lines[_PROVISIONING] = self._line(_PROVISIONING, labels, state, values[_PROVISIONING])
            return tuple(lines)
        return tuple(
            kept if value == before else self._line(column, labels, state, value)
            for column, (value, before, kept) in enumerate(
                zip(values, was.values, was.lines, strict=True)
            )
        )

    def _line(
        self, column: int, labels: _LabelSet, state: str, value: float | None
    ) -> bytes | None:
        if value is None:
            return None
        if column == _PROVISIONING:
            labels = labels.with_state(state)
        return exposition.gauge_line(self._names[column], labels.text, value)

    def _restart_lines(self, restarts: Iterable[tuple[_LabelSet, float]]) -> Iterator[bytes]:
        if self._restarts is not None:
            name = self._restarts[0]
            for labels, count in restarts:
                yield exposition.gauge_line(name, labels.text, count)

    def column(self, index: int) -> tuple[bytes | None, ...]:
        """Family ``index``'s line of each resource (``None`` where it has no sample)."""
        if self._columns is None:
            rows = self.rows.values()
            columns = list(zip(*(row.fixed.lines for row in rows), strict=True))
            if not columns:
                columns = [() for _ in self.families]
            running = list(zip(*(row.running_lines for row in rows), strict=True))
            for at, column in enumerate(_RUNNING_COLUMNS):
                if running:
                    columns[column] = running[at]
            self._columns = columns
        return self._columns[index]

    def samples(self, index: int) -> list[Sample]:
        """Family ``index``'s samples as ``prometheus_client`` tuples."""
        name, stated = self._names[index], index == _PROVISIONING
        samples = []
        for row in self.rows.values():
            value = row.value(index)
            if value is not None:
                labels = row.fixed.labels
                labels = labels.with_state(row.fixed.state) if stated else labels
                samples.append(Sample(name, labels.mapping, value))
        return samples

    def gauges(self) -> list[exposition.RenderedFamily]:
        """A family for each column with at least one sample, then the restarts."""
        families: list[exposition.RenderedFamily] = [
            _KindGauge(name, help, self, index)
            for index, (name, help) in enumerate(self.families)
            if any(self.column(index))  # a line is never empty: one that is not None
        ]
        if self._restarts is not None:
            restarts = [
                (pair, line)
                for row in self.rows.values()
                for pair, line in zip(row.fixed.restarts, row.fixed.restart_lines, strict=True)
            ]
            if restarts:
                name, help = self._restarts
                families.append(_Lines(name, help, restarts))
        return families


class _KindGauge(exposition.RenderedFamily):
    """One family of a kind: its samples are one column of the table, read on demand."""

    def __init__(self, name: str, help: str, table: _KindTable, index: int) -> None:
        super().__init__(name, help)
        self.table = table
        self.index = index

    def build_samples(self) -> list[Sample]:
        return self.table.samples(self.index)

    def sample_lines(self) -> Sequence[bytes]:
        column = self.table.column(self.index)
        if all(column):  # every resource has the sample (most families): no None to drop
            return cast("tuple[bytes, ...]", column)
        return list(filter(None, column))


class _Lines(exposition.RenderedFamily):
    """A family of samples whose lines are already written: (label set, value) and line."""

    @classmethod
    def of(cls, name: str, help: str, labels: Iterable[_LabelSet], value: float) -> _Lines:
        """Every label set with the same ``value`` (1 for each pool scheduled, say)."""
        line = exposition.gauge_line
        return cls(name, help, [((ls, value), line(name, ls.text, value)) for ls in labels])

    def __init__(
        self, name: str, help: str, samples: list[tuple[tuple[_LabelSet, float], bytes]]
    ) -> None:
        super().__init__(name, help)
        self._given = samples

    def build_samples(self) -> list[Sample]:
        return [Sample(self.name, labels.mapping, value) for (labels, value), _ in self._given]

    def sample_lines(self) -> list[bytes]:
        return [line for _, line in self._given]


_SCHEDULED_HELP = "1 for each node pool running the leader pod of a JobSet's Job."
_SUSPENDED_HELP = (
    "1 for each JobSet that is suspended (its Suspended condition is true, e.g. queued by Kueue)."
)


_DISTRIBUTION_HELP = {
    distributions.TIME_TO_RECOVER: (
        "Time to recover of the {noun}'s interruptions (down periods ended by an up), by the "
        "reason of the interruption, from the durable history."
    ),
    distributions.TIME_BETWEEN_INTERRUPTIONS: (
        "Up time of the {noun} before each interruption, by the interruption's reason, from "
        "the durable history."
    ),
    distributions.PROVISIONING: (
        "Time from the {noun}'s first observation to its first up (success) or to GKE "
        "reporting it failed (failed), from the durable history."
    ),
    distributions.MAINTENANCE_LEAD_TIME: (
        "Time from when megamon first saw a host maintenance announced on the {noun}'s nodes "
        "to the maintenance interruption it announced (announced=true; 0 for announced=false), "
        "counted as each interruption begins."
    ),
    distributions.QUEUEING: (
        "Time from the {noun}'s creation to each stage of its queueing (until=quota_reserved, "
        "admitted for a Kueue Workload), counted once per resource and stage as megamon "
        "first sees it reached."
    ),
}


_DESCRIBED_ONLY = frozenset({distributions.QUEUEING})
"""Histograms only a described kind can have (its description's ``Queued`` stages)."""


def _shape_labels(shape: Shape) -> dict[str, str]:
    labels: dict[str, str] = {}
    if shape.accelerator:
        labels[names.LABEL_TPU_ACCELERATOR] = shape.accelerator
    if shape.topology:
        labels[names.LABEL_TPU_TOPOLOGY] = shape.topology
    if shape.spot:
        labels[names.LABEL_SPOT] = names.SPOT_TRUE
    return labels


_LABEL_OF_MEASURE = {
    distributions.PROVISIONING: names.LABEL_PROVISIONING_STATE,
    distributions.MAINTENANCE_LEAD_TIME: names.LABEL_ANNOUNCED,
    distributions.QUEUEING: names.LABEL_UNTIL,
}
"""The label a histogram's ``SeriesKey.label`` goes under: ``reason`` unless named here."""


def _distribution_labels(key: SeriesKey) -> dict[str, str]:
    label_key = _LABEL_OF_MEASURE.get(key.measure, names.LABEL_REASON)
    return {**_shape_labels(key.shape), label_key: key.label}


_LE = [str(floatToGoString(b)) for b in distributions.BUCKETS_S] + ["+Inf"]  # type: ignore[no-untyped-call]


def _histogram_samples(name: str, key: SeriesKey, histogram: Histogram) -> list[Sample]:
    labels = _distribution_labels(key)
    samples = [
        Sample(f"{name}_bucket", {**labels, "le": le}, float(count))
        for le, count in zip(_LE, histogram.cumulative(), strict=True)
    ]
    samples.append(Sample(f"{name}_count", labels, float(histogram.count)))
    samples.append(Sample(f"{name}_sum", labels, seconds(histogram.total_ns)))
    return samples


_HistogramLines = dict[tuple[str, SeriesKey], tuple[tuple[object, ...], list[bytes]]]
"""The lines of each histogram series of a scrape, by family name and series, with the
counts they were written from."""


class _HistogramFamily(exposition.RenderedFamily):
    """One kind's histograms of one measure: a series per ``SeriesKey``. A series whose
    counts are those of the last scrape (most of them, from one cycle to the next) takes
    that scrape's lines (``previous``); every series' lines go into ``kept``."""

    def __init__(
        self, name: str, help: str, previous: _HistogramLines, kept: _HistogramLines
    ) -> None:
        super().__init__(name, help, "histogram")
        self.series: list[tuple[SeriesKey, Histogram]] = []
        self._previous = previous
        self._kept = kept

    def build_samples(self) -> list[Sample]:
        return [
            sample
            for key, histogram in self.series
            for sample in _histogram_samples(self.name, key, histogram)
        ]

    def sample_lines(self) -> list[bytes]:
        """What ``build_samples`` holds, as ``prometheus_client`` writes it."""
        lines: list[bytes] = []
        for key, histogram in self.series:
            counts = (*histogram.counts, histogram.total_ns, histogram.count)
            found = self._previous.get((self.name, key))
            if found is None or found[0] != counts:
                found = (counts, self._series_lines(key, histogram))
            self._kept[(self.name, key)] = found
            lines.extend(found[1])
        return lines

    def _series_lines(self, key: SeriesKey, histogram: Histogram) -> list[bytes]:
        bucket, line = f"{self.name}_bucket", exposition.gauge_line
        labels = _distribution_labels(key)
        lines = [
            line(bucket, exposition.label_text({**labels, "le": le}), float(count))
            for le, count in zip(_LE, histogram.cumulative(), strict=True)
        ]
        text = exposition.label_text(labels)
        lines.append(line(f"{self.name}_count", text, float(histogram.count)))
        lines.append(line(f"{self.name}_sum", text, seconds(histogram.total_ns)))
        return lines


_CHIPS_DOWN_HELP = (
    "Chip-seconds the {noun}s were down in interruptions (closed and ongoing), by reason, "
    "from the durable history; retired resources included."
)
_CHIP_AVAILABILITY_HELP = (
    "Availability of the {noun}s weighted by their TPU chips over all history, live and "
    "retired: chip-seconds up over chip-seconds up or down, expected-down, provisioning and "
    "unobserved time excluded (megamon report's chip availability)."
)


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
        described: Sequence[Kind] = (),
        per_resource: Iterable[str] | None = None,
    ) -> None:
        self._prefix = prefix
        self._per_resource = frozenset(per_resource) if per_resource is not None else None
        """``PerResourceSeries``: the kinds whose per-resource series are published (None:
        every kind); fleet-wide families (histograms, chip figures) are always published."""
        self._described = tuple(described)
        """The configuration's described kinds: their families follow the built-in kinds'."""
        self._latest = latest
        self._is_leader = is_leader
        self._build = build
        self._warned: set[str] = set()
        self._label_sets: dict[tuple[object, ...], _LabelSet] = {}
        """Label sets of the resources of the last scrape, by their attrs' label values."""
        self._rows: dict[Kind, dict[str, _Row]] = {}
        """Each kind's rows of the last scrape, by key: what the next one reuses."""
        self._scheduled: dict[tuple[str, str, str], _LabelSet] = {}
        """The label sets of the last scrape's scheduling series."""
        self._histograms: _HistogramLines = {}
        """The lines of the last scrape's histogram series."""

    def describe(self) -> Iterator[Metric]:
        """Every family name this collector may emit, so the registry can refuse clashes."""
        yield from self._process_families()
        yield from self._freshness_families()
        yield self._scheduling_family()
        yield GaugeMetricFamily(self._suspended_name, _SUSPENDED_HELP)
        yield from maintenance.describe(self._prefix)
        for kind in (*Kind, *self._described):
            for name, help in _kind_families(self._prefix, kind):
                yield GaugeMetricFamily(name, help)
            for measure, help in _DISTRIBUTION_HELP.items():
                if measure in _DESCRIBED_ONLY and kind.builtin:
                    continue
                yield Metric(self._distribution_name(kind.value, measure), help, "histogram")
            for suffix, help in (
                (names.DOWN_CHIP_SECONDS, _CHIPS_DOWN_HELP),
                (names.CHIP_AVAILABILITY, _CHIP_AVAILABILITY_HELP),
            ):
                yield GaugeMetricFamily(self._distribution_name(kind.value, suffix), help)

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
        previous, self._label_sets = self._label_sets, {}
        rows: dict[Kind, dict[str, _Row]] = {}
        for kind in self._rendered_kinds(report):
            if self._publishes(kind):
                kind_families = partial(self._kind, report, kind, previous, rows)
                yield from self._guarded(f"kind {kind.value}", kind_families)
        self._rows = rows
        if self._publishes(Kind.NODEPOOL):
            yield from self._guarded("scheduling", partial(self._scheduling, report))
        if self._publishes(Kind.JOBSET):
            yield from self._guarded("suspended", partial(self._suspended, report))
        yield from self._guarded("distributions", partial(self._distributions, report))
        yield from self._guarded("chips", partial(self._chips, report))
        yield from self._guarded(
            "maintenance", partial(maintenance.scheduled, self._prefix, report)
        )
        if self._publishes(Kind.NODEPOOL):
            allocatable = partial(self._allocatable, report, rows.get(Kind.NODEPOOL, {}))
            yield from self._guarded("allocatable", allocatable)

    def _allocatable(self, report: Report, rows: Mapping[str, _Row]) -> list[_Lines]:
        """``<prefix>_nodepool_tpu_chips_allocatable``, labelled as the pool's other series
        (a pool left out of those is left out here too)."""
        name = names.kind_metric(self._prefix, Kind.NODEPOOL.value, names.TPU_CHIPS_ALLOCATABLE)
        samples = []
        for key, obs in report.kind(Kind.NODEPOOL).observations.items():
            row = rows.get(key)
            if obs.tpu_chips_allocatable is None or row is None:
                continue
            value, fixed = float(obs.tpu_chips_allocatable), row.fixed
            if fixed.allocatable is None:  # the fixed part is of this very observation
                fixed.allocatable = exposition.gauge_line(name, fixed.labels.text, value)
            samples.append(((fixed.labels, value), fixed.allocatable))
        return [_Lines(name, maintenance.ALLOCATABLE_HELP, samples)] if samples else []

    def _noun(self, report: Report, kind_value: str) -> str:
        kinds = {kind.value: kind for kind in (*Kind, *self._described, *report.kinds)}
        kind = kinds.get(kind_value)
        return (kind_spec(kind).noun if kind is not None else "") or kind_value

    def _chips(self, report: Report) -> list[Metric]:
        """Chip-seconds down by reason, and availability weighted by chips, per kind: both
        as the report holds them (the summary stage computes them)."""
        families: dict[str, Metric] = {}
        for kind, shape, reason, chip_ns in report.chips_down:
            family = families.get(kind)
            if family is None:
                name = self._distribution_name(kind, names.DOWN_CHIP_SECONDS)
                help = _CHIPS_DOWN_HELP.format(noun=self._noun(report, kind))
                family = families[kind] = Metric(name, help, "gauge")
            labels = {**_shape_labels(shape), names.LABEL_REASON: reason}
            family.samples.append(Sample(family.name, labels, seconds(chip_ns)))
        ratios: dict[str, Metric] = {}
        for kind, accelerator, ratio in report.chip_availability:
            family = ratios.get(kind)
            if family is None:
                name = self._distribution_name(kind, names.CHIP_AVAILABILITY)
                help = _CHIP_AVAILABILITY_HELP.format(noun=self._noun(report, kind))
                family = ratios[kind] = Metric(name, help, "gauge")
            labels = {names.LABEL_TPU_ACCELERATOR: accelerator} if accelerator else {}
            family.samples.append(Sample(family.name, labels, ratio))
        return [*families.values(), *ratios.values()]

    def _publishes(self, kind: Kind) -> bool:
        """Whether the series budget keeps ``kind``'s per-resource series."""
        return self._per_resource is None or kind.value in self._per_resource

    def _distribution_name(self, kind: str, measure: str) -> str:
        return names.kind_metric(self._prefix, kind, measure)

    def _distributions(self, report: Report) -> list[_HistogramFamily]:
        """One histogram family per kind and measure that has observations."""
        families: dict[tuple[str, str], _HistogramFamily] = {}
        kinds = {kind.value: kind for kind in (*Kind, *self._described, *report.kinds)}
        previous, self._histograms = self._histograms, {}
        for key, histogram in report.distributions:
            family = families.get((key.kind, key.measure))
            if family is None:
                name = self._distribution_name(key.kind, key.measure)
                kind = kinds.get(key.kind)
                noun = (kind_spec(kind).noun if kind is not None else "") or key.kind
                help = _DISTRIBUTION_HELP[key.measure].format(noun=noun)
                family = _HistogramFamily(name, help, previous, self._histograms)
                families[(key.kind, key.measure)] = family
            family.series.append((key, histogram))
        return list(families.values())

    def _rendered_kinds(self, report: Report) -> list[Kind]:
        """The built-in kinds, then every described kind the report holds, by noun."""
        described = sorted((k for k in report.kinds if not k.builtin), key=str)
        return [*Kind, *described]

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
            _SCHEDULED_HELP,
            labels=[names.LABEL_NODEPOOL_NAME, names.LABEL_JOB_NAME, names.LABEL_JOBSET_NAME],
        )

    def _freshness(self, report: Report) -> list[GaugeMetricFamily]:
        observed, reported = self._freshness_families()
        for source, ns in report.observed_at.items():
            observed.add_metric([_text("source", source)], ns / NANOS_PER_SECOND)
        reported.add_metric([], report.generated_at / NANOS_PER_SECOND)
        return [observed, reported] if observed.samples else [reported]

    def _scheduling(self, report: Report) -> list[_Lines]:
        label_sets = []
        previous, self._scheduled = self._scheduled, {}
        for nodepool, job in report.scheduling.items():
            key = (nodepool, job.job_name, job.jobset_name)
            found = previous.get(key)
            if found is None:
                try:
                    found = _LabelSet(
                        {
                            names.LABEL_NODEPOOL_NAME: _text("node pool", nodepool),
                            names.LABEL_JOB_NAME: _text("job name", job.job_name),
                            names.LABEL_JOBSET_NAME: _text("JobSet name", job.jobset_name),
                        }
                    )
                except Exception as err:
                    self._warn_once(f"scheduling {nodepool!r}", err)
                    continue
            self._scheduled[key] = found
            label_sets.append(found)
        if not label_sets:
            return []
        name = names.process_metric(self._prefix, names.NODEPOOL_JOB_SCHEDULED)
        return [_Lines.of(name, _SCHEDULED_HELP, label_sets, 1.0)]

    @property
    def _suspended_name(self) -> str:
        return names.process_metric(self._prefix, names.JOBSET_SUSPENDED)

    def _suspended(self, report: Report) -> list[_Lines]:
        """The suspended JobSets, labelled as their ``jobset_up`` series (alerts join on it)."""
        label_sets = []
        for key, obs in report.kind(Kind.JOBSET).observations.items():
            if obs.status != resource_states.JOBSET_SUSPENDED:
                continue
            try:
                label_sets.append(_LabelSet(attr_labels(obs.attrs)))
            except Exception as err:
                self._warn_once(f"suspended {key!r}", err)
        if not label_sets:
            return []
        return [_Lines.of(self._suspended_name, _SUSPENDED_HELP, label_sets, 1.0)]

    def _kind(
        self,
        report: Report,
        kind: Kind,
        previous: dict[tuple[object, ...], _LabelSet],
        rows: dict[Kind, dict[str, _Row]],
    ) -> list[exposition.RenderedFamily]:
        """The families of ``kind``; its rows go into ``rows``, for the next scrape."""
        table = _KindTable(self._prefix, kind, self._rows.get(kind, {}))
        kind_report: KindReport = report.kind(kind)
        summaries = kind_report.summaries
        workload_labels = kind_spec(kind).workload_labels
        labels_of = partial(self._labels, workload_labels=workload_labels, previous=previous)
        failed = partial(self._resource_failed, kind)
        table.add_all(kind_report.observations, summaries, labels_of, failed)
        rows[kind] = table.rows
        return table.gauges()

    def _resource_failed(self, kind: Kind, key: str, err: Exception) -> None:
        self._warn_once(f"{kind.value} {key!r}", err)

    def _labels(
        self,
        attrs: Attrs,
        workload_labels: tuple[str, str, str],
        previous: dict[tuple[object, ...], _LabelSet],
    ) -> _LabelSet:
        """The label set of ``attrs``: escaped once, then reused while the resource lasts."""
        try:
            workload = _workload_values(attrs)
            key: tuple[object, ...] | None = (*_ATTR_VALUES(attrs), *workload, workload_labels)
            found = self._label_sets.get(key) or previous.get(key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable attr value: attr_labels will say what is wrong
            key, found = None, None
        if found is None:
            found = _LabelSet(attr_labels(attrs, workload_labels))
        if key is not None:
            self._label_sets[key] = found
        return found

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

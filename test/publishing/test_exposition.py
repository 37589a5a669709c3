"""The fast /metrics encoder writes what prometheus_client writes, sample for sample.

Covers the text format and OpenMetrics over reports of every kind: awkward label values,
resources without labels or without a summary, every provisioning state, values that switch
to Go's exponent form, bad resources left out, families of other collectors (histograms,
counters) interleaved with the fleet's, label sets reused across scrapes after attrs change,
content negotiation, and random reports.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client import exposition as reference
from prometheus_client.openmetrics import exposition as reference_openmetrics
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from megamon.domain.distributions import (
    MAINTENANCE_LEAD_TIME,
    PROVISIONING,
    TIME_TO_RECOVER,
    SeriesKey,
    Shape,
)
from megamon.domain.distributions import Histogram as Distribution
from megamon.domain.events import FLAG_FAILED, FLAG_UP, EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report, ScheduledJob
from megamon.domain.summaries import ProvisioningState, Summary
from megamon.publishing.metrics import exposition
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.publishing.metrics.gating import LeaderOnly
from megamon.summary.report import SettledMemo, build_report
from megamon.summary.summarizing import summarize

S = 1_000_000_000
T = 1_780_272_000 * S
BUILD = BuildInfo(version="0.1.0", commit="abc1234", date="2026-06-01")
AWKWARD = 'pool "a"\\b\nc — ünïcødé 池'

Samples = set[tuple[str, tuple[tuple[str, str], ...], float]]


def parsed(text: bytes) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in text_string_to_metric_families(text.decode("utf-8"))
        for s in family.samples
    }


def parsed_openmetrics(text: bytes) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in parse_openmetrics(text.decode("utf-8"))
        for s in family.samples
    }


def registry_of(report: Report | None, *, with_instruments: bool = True) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: report, build=BUILD))
    if with_instruments:
        own = CollectorRegistry()
        Histogram("megamon_aggregation_duration_seconds", "Cycle time.", registry=own).observe(0.3)
        Counter("megamon_observation_errors", "Errors.", ["kind"], registry=own).labels(
            kind="nodepool"
        ).inc()
        registry.register(LeaderOnly(own, lambda: True))
    return registry


_CREATED_LINE = re.compile(rb"^(?:# (?:HELP|TYPE) )?[a-zA-Z_:][a-zA-Z0-9_:]*_created[ {].*\n", re.M)


def without_created(text: bytes) -> bytes:
    """prometheus_client's exposition less the ``_created`` series, which /metrics omits."""
    return _CREATED_LINE.sub(b"", text)


def assert_same_text(registry: CollectorRegistry) -> bytes:
    ours = exposition.generate_latest(registry)
    theirs = without_created(reference.generate_latest(registry))
    assert parsed(ours) == parsed(theirs)
    assert ours == theirs
    return ours


def assert_same_openmetrics(registry: CollectorRegistry) -> None:
    ours = exposition.generate_openmetrics(registry)
    theirs = without_created(reference_openmetrics.generate_latest(registry))
    assert parsed_openmetrics(ours) == parsed_openmetrics(theirs)
    assert ours == theirs


def summary(state: ProvisioningState, *, big: bool = False) -> Summary:
    scale = 10**7 if big else 1
    return Summary(
        down_time_initial=90 * S,
        interruption_count=2,
        recovery_count=1,
        down_time=1_234 * S * scale + 5,
        up_time=98_765 * S * scale + 123_456_789,
        total_down_time_between_recovery=300 * S,
        total_up_time_between_interruption=3_600 * S * scale,
        latest_down_time_between_recovery=150 * S,
        latest_up_time_between_interruption=1_800 * S,
        mean_down_time_between_recovery=150 * S,
        mean_up_time_between_interruption=1_800 * S * scale,
        provisioning_duration=90 * S + 1,
        provisioning_state=state,
    )


def fleet_report() -> Report:
    pools = {
        "a": Observation.build(
            expected=64,
            ready=64,
            attrs=Attrs(
                nodepool_name="a",
                tpu_topology="16x16",
                tpu_accelerator="tpu-v5-lite-podslice",
                tpu_chip_count=256,
                spot=True,
            ),
        ),
        AWKWARD: Observation.build(expected=4, ready=3, attrs=Attrs(nodepool_name=AWKWARD)),
        "bare": Observation.build(expected=1, ready=0),
        "no-summary": Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="ns")),
    }
    jobsets = {
        f"uid-{i}": Observation.build(
            expected=2,
            ready=2 - i % 2,
            expected_down=i == 3,
            attrs=Attrs(
                jobset_name=f"js-{i}",
                jobset_namespace="team",
                jobset_uid=f"uid-{i}",
                tpu_topology="2x2x4",
                tpu_chip_count=16 * i,
            ),
        )
        for i in range(4)
    }
    states = list(ProvisioningState)
    return Report(
        generated_at=T + 123_456_789,
        kinds={
            Kind.NODEPOOL: KindReport(
                observations=pools,
                summaries={
                    "a": summary(ProvisioningState.SUCCESS, big=True),
                    AWKWARD: summary(ProvisioningState.FAILED),
                    "bare": Summary(),
                },
            ),
            Kind.JOBSET: KindReport(
                observations=jobsets,
                summaries={key: summary(states[i]) for i, key in enumerate(jobsets)},
            ),
            Kind.JOBSET_NODES: KindReport(observations=jobsets),
        },
        scheduling={"a": ScheduledJob(job_name="js-0-slice-0", jobset_name="js-0")},
        observed_at={"gke": T, "kubernetes": T - S},
        distributions=tuple(
            (SeriesKey(measure, kind, Shape(*shape), label), histogram(*durations))
            for measure, kind, shape, label, durations in (
                (
                    TIME_TO_RECOVER,
                    "nodepool",
                    ("tpu-v5p-slice", "2x2x2", True),
                    "maintenance",
                    (60 * S, 3 * S + 1, 10**6 * S),
                ),
                (TIME_TO_RECOVER, "nodepool", ("tpu-v5p-slice", "2x2x2"), AWKWARD, (0,)),
                (PROVISIONING, "jobset", ("",), "success", (90 * S,)),
                (MAINTENANCE_LEAD_TIME, "nodepool", ("tpu7x",), "true", (7_200 * S, 1)),
            )
        ),
    )


def histogram(*durations: int) -> Distribution:
    found = Distribution()
    for ns in durations:
        found.add(ns)
    return found


def test_a_fleet_renders_exactly_as_prometheus_client_renders_it() -> None:
    text = assert_same_text(registry_of(fleet_report()))
    assert b'nodepool_name="pool \\"a\\"\\\\b\\nc' in text
    assert b"megamon_nodepool_up_time_seconds{" in text
    assert b"e+" in text  # a value of a million seconds or more, in Go's exponent form
    assert b"# TYPE megamon_nodepool_time_to_recover_seconds histogram\n" in text


def test_openmetrics_renders_exactly_as_prometheus_client_renders_it() -> None:
    assert_same_openmetrics(registry_of(fleet_report()))


def test_nothing_but_build_info_before_the_first_report() -> None:
    text = assert_same_text(registry_of(None, with_instruments=False))
    assert {name for name, _, _ in parsed(text)} == {"megamon_build_info", "megamon_leader"}


def test_a_resource_without_labels_is_written_without_braces() -> None:
    report = Report(
        generated_at=T,
        kinds={
            Kind.NODEPOOL: KindReport(observations={"x": Observation.build(expected=1, ready=1)})
        },
    )
    text = assert_same_text(registry_of(report, with_instruments=False))
    assert b"\nmegamon_nodepool_up 1.0\n" in text


def test_a_bad_resource_is_left_out_of_both_renderings() -> None:
    bad = Observation.build(expected=1, ready=1).model_copy(
        update={"attrs": Attrs.model_construct(nodepool_name=42)}  # type: ignore[arg-type]
    )
    broken = Summary.model_construct(up_time="not a duration")  # type: ignore[arg-type]
    good = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="good"))
    report = Report.model_construct(
        generated_at=T,
        kinds={
            Kind.NODEPOOL: KindReport.model_construct(
                observations={"bad": bad, "broken": good, "good": good},
                summaries={"broken": broken, "good": Summary(up_time=S)},
            )
        },
        scheduling={},
        observed_at={},
    )
    text = assert_same_text(registry_of(report))
    assert text.count(b"megamon_nodepool_up{") == 1


def test_label_sets_follow_attrs_that_change_between_scrapes() -> None:
    current: dict[str, Report] = {}
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: current["report"], build=BUILD))
    for topology in ("8x8", "16x16", "8x8"):
        attrs = Attrs(nodepool_name="a", tpu_topology=topology)
        observations = {"a": Observation.build(expected=1, ready=1, attrs=attrs)}
        current["report"] = Report(
            generated_at=T, kinds={Kind.NODEPOOL: KindReport(observations=observations)}
        )
        text = assert_same_text(registry)
        assert f'tpu_topology="{topology}"'.encode() in text


def test_samples_are_still_there_for_get_sample_value() -> None:
    registry = registry_of(fleet_report())
    assert (
        registry.get_sample_value(
            "megamon_nodepool_tpu_chip_count",
            {
                "nodepool_name": "a",
                "spot": "true",
                "tpu_accelerator": "tpu-v5-lite-podslice",
                "tpu_topology": "16x16",
            },
        )
        == 256.0
    )


@pytest.mark.parametrize(
    ("accept", "encoder"),
    [
        ("", exposition.generate_latest),
        ("text/plain;version=0.0.4", exposition.generate_latest),
        ("application/openmetrics-text;version=1.0.0", exposition.generate_openmetrics),
        (
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            exposition.generate_openmetrics,
        ),
    ],
)
def test_content_negotiation_is_prometheus_clients(
    accept: str, encoder: Callable[..., bytes]
) -> None:
    ours, content_type = exposition.choose_encoder(accept)
    assert getattr(ours, "func", ours) is encoder
    assert content_type == reference.choose_encoder(accept)[1]
    registry = registry_of(fleet_report())
    assert ours(registry) == without_created(reference.choose_encoder(accept)[0](registry))


@pytest.mark.parametrize(
    "value",
    [
        0.0,
        1.0,
        0.5,
        1e-7,
        123456.789,
        999999.9,
        1e6,
        1234567.0,
        1e22,
        float("inf"),
        float("nan"),
        -1.5,
    ],
)
def test_values_are_written_as_go_writes_them(value: float) -> None:
    assert exposition.value_text(value) == floatToGoString(value)
    assert exposition.gauge_lines("m", [""], [value]) == [f"m {floatToGoString(value)}\n".encode()]
    assert exposition.gauge_line("m", "", value) == f"m {floatToGoString(value)}\n".encode()


@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(min_value=1e6, max_value=1e16),
        st.integers(min_value=10**6, max_value=10**16).map(float),
        st.integers(min_value=10**15, max_value=10**17).map(lambda ns: ns / 10**9),
        st.sampled_from([1e6, 1e10, 9999999999.999998, 1e16, 1e16 - 2, 999999.9999999999]),
    )
)
def test_any_value_is_written_as_prometheus_client_writes_it(value: float) -> None:
    assert exposition.value_text(value) == floatToGoString(value)
    assert exposition.gauge_line("m", "", value) == f"m {floatToGoString(value)}\n".encode()


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_ns = st.integers(min_value=0, max_value=10**18)


@st.composite
def reports(draw: st.DrawFn) -> Report:
    kinds = {}
    for kind in draw(st.sets(st.sampled_from(list(Kind)), max_size=3)):
        observations, summaries = {}, {}
        for key in draw(st.lists(_text, max_size=6, unique=True)):
            attrs = Attrs(
                nodepool_name=draw(_text),
                tpu_topology=draw(st.sampled_from(["", "2x2", "16x16"])),
                # Every resource carries its identity (observers set the key as an attr), so
                # two resources never share a label set.
                jobset_uid=key,
                spot=draw(st.booleans()),
                tpu_chip_count=draw(st.integers(min_value=0, max_value=10**6)),
            )
            observations[key] = Observation.build(
                expected=2, ready=draw(st.integers(0, 2)), attrs=attrs
            )
            if draw(st.booleans()):
                summaries[key] = Summary(
                    up_time=draw(_ns),
                    down_time=draw(_ns),
                    interruption_count=draw(st.integers(0, 10**9)),
                    mean_up_time_between_interruption=draw(_ns),
                    provisioning_duration=draw(_ns),
                    provisioning_state=draw(st.sampled_from(list(ProvisioningState))),
                )
        kinds[kind] = KindReport(observations=observations, summaries=summaries)
    series = draw(
        st.dictionaries(
            st.tuples(
                st.sampled_from([TIME_TO_RECOVER, PROVISIONING]),
                st.sampled_from([kind.value for kind in Kind]),
                st.builds(Shape, _text, st.sampled_from(["", "4x4"]), st.booleans()),
                _text,
            ),
            st.lists(st.integers(min_value=0, max_value=10**15), min_size=1, max_size=4),
            max_size=3,
        )
    )
    distributions = tuple(
        (SeriesKey(*key), histogram(*durations)) for key, durations in series.items()
    )
    return Report(generated_at=draw(_ns), kinds=kinds, distributions=distributions)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reports())
def test_any_report_renders_as_prometheus_client_renders_it(report: Report) -> None:
    registry = registry_of(report, with_instruments=False)
    assert_same_text(registry)
    assert_same_openmetrics(registry)


def test_no_created_series_on_metrics_but_the_registry_keeps_them() -> None:
    """``_created`` is one more series per counter and histogram that nothing reads; the OTLP
    exporter still takes its start times from the registry."""
    registry = registry_of(fleet_report())
    for text in (exposition.generate_latest(registry), exposition.generate_openmetrics(registry)):
        assert b"_created" not in text
        assert b"megamon_observation_errors_total" in text
        assert b"megamon_aggregation_duration_seconds_count" in text
    assert b"_created" in reference.generate_latest(registry)
    collected = {s.name for family in registry.collect() for s in family.samples}
    assert "megamon_observation_errors_created" in collected


_SUMMARIES = [
    None,
    Summary(),
    summary(ProvisioningState.SUCCESS),
    summary(ProvisioningState.SUCCESS, big=True),
    summary(ProvisioningState.PROVISIONING),
    summary(ProvisioningState.FAILED).model_copy(update={"up_time": 7 * S}),
    # the same settled figures with time run on: only the running values differ
    summary(ProvisioningState.SUCCESS).model_copy(update={"up_time": 98_775 * S}),
    summary(ProvisioningState.SUCCESS).model_copy(update={"down_time": 1_244 * S}),
    summary(ProvisioningState.PROVISIONING).model_copy(update={"provisioning_duration": 9 * S}),
    summary(ProvisioningState.PROVISIONING).model_copy(update={"down_time": 0, "up_time": 0}),
]


@st.composite
def scrapes(draw: st.DrawFn) -> list[Report]:
    """Reports in sequence, as one collector scrapes them: the same observation objects
    (the observers hand them back while nothing changed) with summaries that change or not,
    observations replaced (other attrs, other restarts), resources that come and go."""
    keys = [f"k{i}" for i in range(draw(st.integers(1, 5)))]
    variants = {
        key: [
            Observation.build(
                expected=2,
                ready=ready,
                attrs=Attrs(jobset_uid=key, tpu_topology=topology, tpu_chip_count=chips),
            ).model_copy(update={"restart_counts": restarts})
            for ready, topology, chips, restarts in (
                (2, "2x2", 4, (("jobset", 1),)),
                (1, "2x2", 4, (("jobset", 2), ("in-place", 1))),
                (2, "4x4", 16, ()),
            )
        ]
        for key in keys
    }
    reports = []
    for n in range(draw(st.integers(2, 5))):
        kinds = {}
        for kind in (Kind.NODEPOOL, Kind.JOBSET):
            observations, summaries = {}, {}
            for key in keys:
                variant = draw(st.integers(-1, 2))
                if variant < 0:
                    continue
                observations[key] = variants[key][variant]
                found = draw(st.sampled_from(_SUMMARIES))
                if found is not None:
                    summaries[key] = found
            kinds[kind] = KindReport(observations=observations, summaries=summaries)
        reports.append(Report(generated_at=T + n * S, kinds=kinds))
    return reports


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scrapes())
def test_each_scrape_of_a_sequence_renders_as_a_first_scrape_would(reports: list[Report]) -> None:
    """What a scrape reuses from the last one (label sets, restarts, lines of equal values)
    never shows: every scrape writes what a new collector writes for its report."""
    current: dict[str, Report] = {}
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: current["report"], build=BUILD))
    for report in reports:
        current["report"] = report
        fresh = registry_of(report, with_instruments=False)
        assert exposition.generate_latest(registry) == exposition.generate_latest(fresh)
        assert exposition.generate_latest(registry) == without_created(
            reference.generate_latest(fresh)
        )
        assert exposition.generate_openmetrics(registry) == exposition.generate_openmetrics(fresh)


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[int, dict[str, EventRecord], dict[str, Observation]]]:
    """Cycles of the report stage's input: records that gain events (or not, or are made
    afresh), observations kept as the same objects or replaced, a ``now`` that moves on
    (once in a while before a record's latest event, as a clock skew allows)."""
    keys = ["a", "b", "c"]
    observed = {
        key: Observation.build(expected=1, ready=1, attrs=Attrs(jobset_uid=key)) for key in keys
    }
    records = {key: EventRecord.trusted((T,), bytes((0,))) for key in keys}
    cycles = []
    now = T
    for _ in range(draw(st.integers(2, 6))):
        now += draw(st.integers(1, 10**12))
        for key in keys:
            step = draw(st.sampled_from(["keep", "event", "failed", "afresh", "other obs"]))
            record = records[key]
            if step in ("event", "failed"):
                up = not record.flags[-1] & FLAG_UP
                flags = FLAG_UP if up else (FLAG_FAILED if step == "failed" else 0)
                at = record.timestamps[-1] + draw(st.integers(0, 10**11))
                records[key] = EventRecord.trusted(
                    (*record.timestamps, at), record.flags + bytes((flags,))
                )
            elif step == "afresh":
                records[key] = EventRecord.trusted(record.timestamps, bytes(record.flags))
            elif step == "other obs":
                observed[key] = observed[key].model_copy(update={"ready": 0})
        latest = max(record.timestamps[-1] for record in records.values())
        if latest > now and draw(st.booleans()):
            now = latest  # otherwise a record runs ahead of now
        cycles.append((now, dict(records), dict(observed)))
    return cycles


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_the_report_stages_summaries_render_as_plain_summaries_would(
    cycles: list[tuple[int, dict[str, EventRecord], dict[str, Observation]]],
) -> None:
    """Reports as the report stage builds them, cycle after cycle (summaries made when read,
    rows kept by their ``Settled``), scrape to the same text as the same reports with every
    summary made up front, by a new collector."""
    memo = SettledMemo()
    current: dict[str, Report] = {}
    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", lambda: current["report"], build=BUILD))
    for now, records, observations in cycles:
        report = build_report(
            {Kind.JOBSET: observations},
            {Kind.JOBSET: records},
            kinds=[Kind.JOBSET],
            scheduling={},
            observed_at={},
            now=now,
            memo=memo,
        )
        current["report"] = report
        ours = exposition.generate_latest(registry)
        plain = Report(
            generated_at=now,
            kinds={
                Kind.JOBSET: KindReport(
                    observations=observations,
                    summaries={key: summarize(records[key], now) for key in observations},
                )
            },
        )
        assert ours == exposition.generate_latest(registry_of(plain, with_instruments=False))

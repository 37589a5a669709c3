"""The report collector: the docs/metrics.md metrics contract, rendered from hand-built reports.

Covers names and prefixes, label sets (empty attrs omitted, spot only when true), the
only-when-non-zero rules, the provisioning states, scheduling, build info and leadership,
freshness, label escaping through the text format, and scrapes that survive bad data.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report, ScheduledJob
from megamon.domain.summaries import ProvisioningState, Summary
from megamon.publishing.metrics import names
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector, attr_labels

S = 1_000_000_000  # nanoseconds per second
T = 1_780_272_000 * S  # 2026-06-01T00:00:00Z
BUILD = BuildInfo(version="0.1.0", commit="abc1234", date="2026-06-01")

POOL_A = Attrs(
    nodepool_name="tpu-pool-a",
    tpu_topology="16x16",
    tpu_accelerator="tpu-v5-lite-podslice",
    tpu_chip_count=256,
)
POOL_A_LABELS = {
    "nodepool_name": "tpu-pool-a",
    "tpu_topology": "16x16",
    "tpu_accelerator": "tpu-v5-lite-podslice",
}


def scrape_registry(
    report: Report | None, *, prefix: str = "megamon", leader: bool = True
) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(ReportCollector(prefix, lambda: report, lambda: leader, build=BUILD))
    return registry


def one_kind(
    kind: Kind,
    observations: dict[str, Observation],
    summaries: dict[str, Summary] | None = None,
    **report: object,
) -> Report:
    kinds = {kind: KindReport(observations=observations, summaries=summaries or {})}
    return Report.model_validate({"generated_at": T, "kinds": kinds, **report})


def sample_names(registry: CollectorRegistry) -> set[str]:
    return {s.name for family in registry.collect() for s in family.samples}


def test_attr_fields_map_to_label_keys_in_design_order() -> None:
    fields = [field for field, _ in names.ATTR_LABELS]
    # The Go megamon labels no series with the chip count or the slice UID (OTELAttrs).
    assert set(fields) == set(Attrs.model_fields) - {"tpu_chip_count", "slice_uid"}
    assert [key for _, key in names.ATTR_LABELS][:4] == [
        "nodepool_name",
        "tpu_topology",
        "tpu_accelerator",
        "spot",
    ]


def test_a_node_pool_still_provisioning_reports_its_growing_duration() -> None:
    summary = Summary(
        down_time=319_972_495_761,
        down_time_initial=0,
        provisioning_duration=319_972_495_761,
        provisioning_state=ProvisioningState.PROVISIONING,
    )
    obs = Observation.build(expected=64, ready=10, attrs=POOL_A)
    registry = scrape_registry(
        one_kind(Kind.NODEPOOL, {"tpu-pool-a": obs}, {"tpu-pool-a": summary})
    )

    labels = {**POOL_A_LABELS, "provisioning_state": "provisioning"}
    value = registry.get_sample_value("megamon_nodepool_provisioning_duration_seconds", labels)
    assert value == 319.972495761
    assert registry.get_sample_value("megamon_nodepool_up", POOL_A_LABELS) == 0.0
    assert registry.get_sample_value("megamon_nodepool_down_time_seconds", POOL_A_LABELS) == (
        319.972495761
    )
    assert registry.get_sample_value("megamon_nodepool_tpu_chip_count", POOL_A_LABELS) == 256.0


def test_a_node_pool_that_came_up_reports_success_with_its_frozen_duration() -> None:
    summary = Summary(
        down_time_initial=754 * S,
        down_time=754 * S,
        up_time=3600 * S,
        provisioning_duration=754 * S,
        provisioning_state=ProvisioningState.SUCCESS,
    )
    obs = Observation.build(expected=64, ready=64, attrs=POOL_A)
    registry = scrape_registry(
        one_kind(Kind.NODEPOOL, {"tpu-pool-a": obs}, {"tpu-pool-a": summary})
    )

    success = {**POOL_A_LABELS, "provisioning_state": "success"}
    name = "megamon_nodepool_provisioning_duration_seconds"
    assert registry.get_sample_value(name, success) == 754.0
    assert (
        registry.get_sample_value(name, {**POOL_A_LABELS, "provisioning_state": "failed"}) is None
    )
    assert registry.get_sample_value("megamon_nodepool_up", POOL_A_LABELS) == 1.0
    initial = registry.get_sample_value("megamon_nodepool_down_time_initial_seconds", POOL_A_LABELS)
    assert initial == 754.0


def test_a_node_pool_that_failed_reports_failed_with_the_time_failure_was_seen() -> None:
    summary = Summary(
        down_time=900 * S,
        provisioning_duration=421_500_000_000,
        provisioning_state=ProvisioningState.FAILED,
    )
    obs = Observation.build(expected=64, ready=0, status="ERROR", failed=True, attrs=POOL_A)
    registry = scrape_registry(
        one_kind(Kind.NODEPOOL, {"tpu-pool-a": obs}, {"tpu-pool-a": summary})
    )

    failed = {**POOL_A_LABELS, "provisioning_state": "failed"}
    name = "megamon_nodepool_provisioning_duration_seconds"
    assert registry.get_sample_value(name, failed) == 421.5
    assert registry.get_sample_value("megamon_nodepool_up", POOL_A_LABELS) == 0.0


def test_no_provisioning_series_without_a_provisioning_state() -> None:
    obs = Observation.build(expected=1, ready=1, attrs=POOL_A)
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"a": obs}, {"a": Summary()}))
    assert "megamon_nodepool_provisioning_duration_seconds" not in sample_names(registry)


def test_an_expected_down_resource_is_up_0_whatever_its_counts() -> None:
    obs = Observation.build(
        expected=4, ready=4, status="STOPPING", expected_down=True, attrs=POOL_A
    )
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"tpu-pool-a": obs}))
    assert registry.get_sample_value("megamon_nodepool_up", POOL_A_LABELS) == 0.0


def test_totals_and_counts_are_always_emitted_even_when_zero() -> None:
    obs = Observation.build(expected=1, ready=1, attrs=POOL_A)
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"a": obs}, {"a": Summary()}))
    for suffix in ("up_time_seconds", "down_time_seconds", "interruption_count", "recovery_count"):
        assert registry.get_sample_value(f"megamon_nodepool_{suffix}", POOL_A_LABELS) == 0.0


def test_between_and_initial_figures_are_emitted_only_when_non_zero() -> None:
    obs = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="zero"))
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"zero": obs}, {"zero": Summary()}))
    present = sample_names(registry)
    for suffix in (
        "down_time_initial_seconds",
        "down_time_between_recovery_seconds",
        "down_time_between_recovery_mean_seconds",
        "down_time_between_recovery_latest_seconds",
        "up_time_between_interruption_seconds",
        "up_time_between_interruption_mean_seconds",
        "up_time_between_interruption_latest_seconds",
        "tpu_chip_count",
    ):
        assert f"megamon_nodepool_{suffix}" not in present


def test_between_figures_are_seconds_of_the_summary_fields() -> None:
    summary = Summary(
        interruption_count=2,
        recovery_count=2,
        total_down_time_between_recovery=300 * S,
        mean_down_time_between_recovery=150 * S,
        latest_down_time_between_recovery=100 * S,
        total_up_time_between_interruption=7200 * S,
        mean_up_time_between_interruption=3600 * S,
        latest_up_time_between_interruption=1_500_000_001,
    )
    obs = Observation.build(expected=1, ready=1, attrs=POOL_A)
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"a": obs}, {"a": summary}))
    expected = {
        "interruption_count": 2.0,
        "recovery_count": 2.0,
        "down_time_between_recovery_seconds": 300.0,
        "down_time_between_recovery_mean_seconds": 150.0,
        "down_time_between_recovery_latest_seconds": 100.0,
        "up_time_between_interruption_seconds": 7200.0,
        "up_time_between_interruption_mean_seconds": 3600.0,
        "up_time_between_interruption_latest_seconds": 1.500000001,
    }
    for suffix, value in expected.items():
        assert registry.get_sample_value(f"megamon_nodepool_{suffix}", POOL_A_LABELS) == value


def test_a_resource_without_a_summary_still_reports_up() -> None:
    obs = Observation.build(expected=1, ready=1, attrs=POOL_A)
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"tpu-pool-a": obs}))
    assert registry.get_sample_value("megamon_nodepool_up", POOL_A_LABELS) == 1.0
    assert "megamon_nodepool_up_time_seconds" not in sample_names(registry)


def test_spot_label_only_when_true() -> None:
    spot = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="s", spot=True))
    on_demand = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="d"))
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"s": spot, "d": on_demand}))
    assert registry.get_sample_value("megamon_nodepool_up", {"nodepool_name": "s", "spot": "true"})
    assert registry.get_sample_value("megamon_nodepool_up", {"nodepool_name": "d"}) == 1.0
    assert registry.get_sample_value("megamon_nodepool_up", {"nodepool_name": "s"}) is None


def test_empty_attrs_are_omitted_from_the_label_set() -> None:
    attrs = Attrs(jobset_name="train", jobset_namespace="ml", jobset_uid="uid-1")
    assert attr_labels(attrs) == {
        "jobset_name": "train",
        "jobset_namespace": "ml",
        "jobset_uid": "uid-1",
    }
    assert attr_labels(Attrs()) == {}


def test_every_attr_becomes_its_label() -> None:
    attrs = Attrs(
        slice_name="s",
        slice_owner_kind="JobSet",
        slice_owner_name="train",
        slice_owner_namespace="ml",
        lws_name="serve",
        lws_namespace="inference",
        lws_uid="uid-2",
    )
    assert attr_labels(attrs) == {
        "slice_name": "s",
        "slice_owner_kind": "JobSet",
        "slice_owner_name": "train",
        "slice_owner_namespace": "ml",
        "lws_name": "serve",
        "lws_namespace": "inference",
        "lws_uid": "uid-2",
    }


def test_the_prefix_starts_every_name() -> None:
    obs = Observation.build(expected=1, ready=1, attrs=POOL_A)
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"a": obs}), prefix="megamon_alpha")
    assert registry.get_sample_value("megamon_alpha_nodepool_up", POOL_A_LABELS) == 1.0
    assert registry.get_sample_value("megamon_alpha_leader") == 1.0
    assert all(name.startswith("megamon_alpha_") for name in sample_names(registry))


@pytest.mark.parametrize("kind", list(Kind))
def test_the_kind_value_is_the_infix(kind: Kind) -> None:
    attrs = Attrs(jobset_name="train", jobset_uid="uid-1", tpu_chip_count=64)
    obs = Observation.build(expected=2, ready=2, attrs=attrs)
    summary = Summary(up_time=10 * S)
    registry = scrape_registry(one_kind(kind, {"uid-1": obs}, {"uid-1": summary}))
    labels = {"jobset_name": "train", "jobset_uid": "uid-1"}
    assert registry.get_sample_value(f"megamon_{kind.value}_up", labels) == 1.0
    assert registry.get_sample_value(f"megamon_{kind.value}_up_time_seconds", labels) == 10.0
    assert registry.get_sample_value(f"megamon_{kind.value}_tpu_chip_count", labels) == 64.0


def test_jobset_nodes_series_use_their_own_infix() -> None:
    obs = Observation.build(expected=2, ready=1, attrs=Attrs(jobset_name="train"))
    registry = scrape_registry(one_kind(Kind.JOBSET_NODES, {"uid": obs}))
    assert registry.get_sample_value("megamon_jobset_nodes_up", {"jobset_name": "train"}) == 0.0
    assert registry.get_sample_value("megamon_jobset_up", {"jobset_name": "train"}) is None


def test_each_scheduled_job_is_a_series_of_1() -> None:
    scheduling = {
        "pool-a": ScheduledJob(job_name="train-slice-0", jobset_name="train"),
        "pool-b": ScheduledJob(job_name="eval-slice-0", jobset_name="eval"),
    }
    registry = scrape_registry(Report(generated_at=T, scheduling=scheduling))
    name = "megamon_nodepool_job_scheduled"
    labels = {"nodepool_name": "pool-b", "job_name": "eval-slice-0", "jobset_name": "eval"}
    assert registry.get_sample_value(name, labels) == 1.0
    assert sum(1 for family in registry.collect() for s in family.samples if s.name == name) == 2


def test_the_chip_availability_ratio_is_the_reports_rows_and_nothing_else() -> None:
    """The summary stage computes the ratio; the collector renders its rows as they are, and
    a kind or accelerator without a row (neither up nor down time) has no sample, whatever
    the resources' own summaries say."""
    pool = Observation.build(expected=1, ready=0, attrs=Attrs(tpu_accelerator="tpu-v5p-slice",
                                                              tpu_chip_count=4))  # fmt: skip
    rows = (("jobset", "", 0.5), ("jobset", "tpu-v6e-slice", 0.875))
    report = one_kind(Kind.NODEPOOL, {"np": pool}, {"np": Summary(down_time=10 * S)},
                      chip_availability=rows)  # fmt: skip
    registry = scrape_registry(report)
    assert registry.get_sample_value("megamon_jobset_chip_availability_ratio", {}) == 0.5
    six = {"tpu_accelerator": "tpu-v6e-slice"}
    assert registry.get_sample_value("megamon_jobset_chip_availability_ratio", six) == 0.875
    assert "megamon_nodepool_chip_availability_ratio" not in sample_names(registry)


def test_only_suspended_jobsets_have_a_suspended_series_labelled_as_their_up() -> None:
    def jobset(name: str, ready: int, status: str = "") -> Observation:
        attrs = Attrs(jobset_name=name, jobset_namespace="ml", jobset_uid=f"uid-{name}")
        return Observation.build(expected=2, ready=ready, status=status, attrs=attrs)

    observations = {
        "q": jobset("queued", 0, "Suspended"),
        "f": jobset("broken", 0, "Failed"),
        "r": jobset("running", 2),
    }
    registry = scrape_registry(one_kind(Kind.JOBSET, observations))
    queued = {"jobset_name": "queued", "jobset_namespace": "ml", "jobset_uid": "uid-queued"}
    assert registry.get_sample_value("megamon_jobset_suspended", queued) == 1.0
    assert registry.get_sample_value("megamon_jobset_up", queued) == 0.0
    suspended = [
        s.labels["jobset_name"]
        for family in registry.collect()
        for s in family.samples
        if s.name == "megamon_jobset_suspended"
    ]
    assert suspended == ["queued"]


def test_build_info_and_leader_are_always_there() -> None:
    registry = scrape_registry(Report(generated_at=T))
    labels = {"version": "0.1.0", "commit": "abc1234", "date": "2026-06-01"}
    assert registry.get_sample_value("megamon_build_info", labels) == 1.0
    assert registry.get_sample_value("megamon_leader") == 1.0


def test_a_standby_publishes_only_build_info_and_leader_0() -> None:
    obs = Observation.build(expected=1, ready=1, attrs=POOL_A)
    scheduling = {"p": ScheduledJob(job_name="j", jobset_name="js")}
    report = one_kind(Kind.NODEPOOL, {"a": obs}, {"a": Summary()}, scheduling=scheduling)
    registry = scrape_registry(report, leader=False)
    assert sample_names(registry) == {"megamon_build_info", "megamon_leader"}
    assert registry.get_sample_value("megamon_leader") == 0.0


def test_before_the_first_report_only_build_info_and_leader() -> None:
    registry = scrape_registry(None)
    assert sample_names(registry) == {"megamon_build_info", "megamon_leader"}
    assert registry.get_sample_value("megamon_leader") == 1.0


def test_freshness_gauges_are_unix_seconds() -> None:
    report = Report(generated_at=T + 500_000_000, observed_at={"gke": T, "kubernetes": T - S})
    registry = scrape_registry(report)
    name = "megamon_last_observation_timestamp_seconds"
    assert registry.get_sample_value(name, {"source": "gke"}) == 1_780_272_000.0
    assert registry.get_sample_value(name, {"source": "kubernetes"}) == 1_780_271_999.0
    assert registry.get_sample_value("megamon_last_report_timestamp_seconds") == 1_780_272_000.5


def test_awkward_label_values_round_trip_through_the_text_format() -> None:
    awkward = 'pool "a"\\b\nc — ünïcødé 池'
    obs = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name=awkward))
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {awkward: obs}))
    text = generate_latest(registry).decode("utf-8")
    parsed = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert parsed[("megamon_nodepool_up", (("nodepool_name", awkward),))] == 1.0


def test_every_family_has_a_one_line_help() -> None:
    obs = Observation.build(expected=1, ready=1, attrs=POOL_A)
    summary = Summary(down_time_initial=S, provisioning_state=ProvisioningState.SUCCESS)
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"a": obs}, {"a": summary}))
    for family in registry.collect():
        assert family.documentation
        assert "\n" not in family.documentation


def test_describe_lets_the_registry_refuse_a_clashing_collector() -> None:
    registry = scrape_registry(None)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        registry.register(ReportCollector("megamon", lambda: None, build=BUILD))


def test_a_bad_resource_is_left_out_whole_and_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="good"))
    bad = Observation.build(expected=1, ready=1, attrs=Attrs(nodepool_name="bad"))
    broken = Summary.model_construct(up_time="not a duration")  # type: ignore[arg-type]
    report = Report.model_construct(
        generated_at=T,
        kinds={
            Kind.NODEPOOL: KindReport.model_construct(
                observations={"bad": bad, "good": good},
                summaries={"bad": broken, "good": Summary(up_time=S)},
            )
        },
        scheduling={},
        observed_at={},
    )
    registry = scrape_registry(report)
    with caplog.at_level(logging.WARNING, logger="megamon.publishing.metrics"):
        generate_latest(registry)
        generate_latest(registry)
    assert registry.get_sample_value("megamon_nodepool_up", {"nodepool_name": "bad"}) is None
    assert registry.get_sample_value("megamon_nodepool_up", {"nodepool_name": "good"}) == 1.0
    good_up_time = {"nodepool_name": "good"}
    assert registry.get_sample_value("megamon_nodepool_up_time_seconds", good_up_time) == 1.0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "'bad'" in warnings[0].getMessage()


def test_a_non_string_label_value_never_reaches_the_exposition() -> None:
    bad = Observation.build(expected=1, ready=1).model_copy(
        update={"attrs": Attrs.model_construct(nodepool_name=42)}  # type: ignore[arg-type]
    )
    scheduling = {"p": ScheduledJob.model_construct(job_name=None, jobset_name="js")}  # type: ignore[arg-type]
    report = Report.model_construct(
        generated_at=T,
        kinds={Kind.NODEPOOL: KindReport(observations={"bad": bad})},
        scheduling=scheduling,
        observed_at={},
    )
    registry = scrape_registry(report)
    names_seen = {
        line.split("{")[0].split(" ")[0] for line in generate_latest(registry).decode().splitlines()
    }
    assert "megamon_nodepool_up" not in names_seen
    assert "megamon_nodepool_job_scheduled" not in names_seen


def test_a_failing_latest_or_leader_callable_does_not_fail_the_scrape() -> None:
    def boom() -> Report | None:
        raise RuntimeError("store down")

    registry = CollectorRegistry()
    registry.register(ReportCollector("megamon", boom, build=BUILD))
    assert sample_names(registry) == {"megamon_build_info", "megamon_leader"}

    def flaky_leader() -> bool:
        raise RuntimeError("lease unknown")

    standby = CollectorRegistry()
    standby.register(
        ReportCollector("megamon", lambda: Report(generated_at=T), flaky_leader, build=BUILD)
    )
    assert standby.get_sample_value("megamon_leader") == 0.0


def test_every_metric_is_documented() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text(encoding="utf-8")
    collector = ReportCollector("megamon", lambda: None, build=BUILD)
    described = {family.name for family in collector.describe()}
    nodepool_series = {name for name in described if name.startswith("megamon_nodepool_")}
    pools_only = {"megamon_nodepool_tpu_chips_allocatable"}
    own = {"megamon_jobset_restarts", "megamon_nodepool_surplus_nodes", *pools_only}
    surplus = {"megamon_nodepool_surplus_nodes", "megamon_jobset_nodes_surplus_nodes"}
    shared = nodepool_series - {"megamon_nodepool_job_scheduled"} - own
    assert surplus <= described
    assert len(described) == 9 + len(Kind) * len(shared) + len(own | surplus)
    assert "### `megamon_<kind>_surplus_nodes`" in docs
    for name in sorted(described - surplus):
        if name in own - pools_only:
            assert f"\n{name}{{" in docs, f"no example of {name}"
        elif name.startswith(tuple(f"megamon_{kind.value}_" for kind in Kind)):
            continue  # every kind shares the nodepool series, documented with that example
        assert f"### `{name}`" in docs, name
    for name in sorted(nodepool_series):
        example = f"\n{name}{{" in docs or f"\n{name}_bucket{{" in docs  # a histogram's
        assert example, f"no example of {name}"


def test_surplus_nodes_are_a_gauge_of_the_kinds_that_count_nodes_only_when_non_zero() -> None:
    surged = Observation.build(expected=64, ready=65, surplus=1, attrs=POOL_A)
    exact = Observation.build(
        expected=64, ready=64, attrs=POOL_A.model_copy(update={"nodepool_name": "tpu-pool-b"})
    )
    registry = scrape_registry(one_kind(Kind.NODEPOOL, {"a": surged, "b": exact}))
    assert registry.get_sample_value("megamon_nodepool_up", POOL_A_LABELS) == 1.0
    assert registry.get_sample_value("megamon_nodepool_surplus_nodes", POOL_A_LABELS) == 1.0
    assert "megamon_nodepool_surplus_nodes" not in {
        s.name
        for f in registry.collect()
        for s in f.samples
        if s.labels.get("nodepool_name") == "tpu-pool-b"
    }
    jobset = Observation.build(expected=1, ready=1, surplus=3)  # not a kind that counts nodes
    assert "megamon_jobset_surplus_nodes" not in sample_names(
        scrape_registry(one_kind(Kind.JOBSET, {"j": jobset}))
    )

"""The monitoring assets in deploy/: alert and recording rules, and the Grafana dashboard.

Every PromQL expression (each rule's, each dashboard target's, each template variable's
``label_values`` selector) must parse with a real PromQL parser (``promql-parser``) and may only
name metrics that megamon actually produces: the names are taken from a scrape of a
``ReportCollector`` and ``Instruments`` rendering a hand-built report that has every kind of
resource and every provisioning state, so a renamed metric or a typo fails here rather than on
an SRE's empty panel. Label names used in matchers, groupings, legends and annotations must exist
on those series (or be added by the scraper). The shape of the rule files, their GMP twin and the
dashboard JSON is checked too, and the two "down" alerts are evaluated on rendered scrapes of
real histories, because they rely on how the summary's durations add up.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import promql_parser as pq
import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from megamon.domain.distributions import (
    MEASURES,
    PROVISIONING,
    Histogram,
    SeriesKey,
    Shape,
)
from megamon.domain.events import EventRecord, UpEvent
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.domain.reports import KindReport, Report, ScheduledJob
from megamon.domain.summaries import ProvisioningState, Summary
from megamon.publishing.metrics.collector import BuildInfo, ReportCollector
from megamon.summary.summarizing import summarize
from megamon.telemetry import Instruments

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "alerts"
RULES = ALERTS / "megamon-rules.yaml"
GMP_DIR = ALERTS / "gmp"
GMP_RULES = GMP_DIR / "megamon-rules.yaml"
DASHBOARD = ROOT / "deploy" / "dashboards" / "megamon.json"

PREFIX = "megamon"
S = 1_000_000_000  # nanoseconds per second
M = 60 * S
T = 1_780_272_000 * S  # 2026-06-01T00:00:00Z

TARGET_LABELS = frozenset(
    {
        # Added by the scraper: Prometheus / prometheus-operator, and GMP's resource labels.
        "job",
        "instance",
        "namespace",
        "pod",
        "service",
        "endpoint",
        "container",
        "cluster",
        "location",
        "project_id",
    }
)
SEVERITIES = frozenset({"critical", "warning", "info"})
ALERT_KEYS = frozenset({"alert", "expr", "for", "keep_firing_for", "labels", "annotations"})
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
ALERT_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
DS = {"type": "prometheus", "uid": "${datasource}"}

# Grafana's built-in variables, replaced by something of the right type before parsing.
GRAFANA_BUILTINS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1d"}
GRAFANA_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]")


# ------------------------------------------------------------------------------------------
# What megamon produces: a scrape of a report that has everything.


def _full_summary(state: ProvisioningState = ProvisioningState.SUCCESS) -> Summary:
    """A summary whose every figure is non-zero, so that every optional series is emitted."""
    return Summary(
        down_time_initial=600 * S,
        interruption_count=3,
        recovery_count=2,
        down_time=1800 * S,
        up_time=86_400 * S,
        total_down_time_between_recovery=1200 * S,
        total_up_time_between_interruption=72_000 * S,
        latest_down_time_between_recovery=700 * S,
        latest_up_time_between_interruption=30_000 * S,
        mean_down_time_between_recovery=600 * S,
        mean_up_time_between_interruption=24_000 * S,
        provisioning_duration=600 * S,
        provisioning_state=state,
    )


TPU = {"tpu_topology": "4x4", "tpu_accelerator": "tpu-v5-lite-podslice", "tpu_chip_count": 16}
JOBSET = {"jobset_name": "train", "jobset_namespace": "ml", "jobset_uid": "uid-1", **TPU}

# One resource of each kind with every figure, as the observers would label it.
FULL_ATTRS: dict[Kind, Attrs] = {
    Kind.NODEPOOL: Attrs(nodepool_name="pool-ok", spot=True, **TPU),
    Kind.JOBSET: Attrs(**JOBSET),
    Kind.JOBSET_NODES: Attrs(**JOBSET),
    Kind.SLICE: Attrs(
        slice_name="slice-a",
        slice_owner_kind="JobSet",
        slice_owner_name="train",
        slice_owner_namespace="ml",
        **TPU,
    ),
    Kind.LEADERWORKERSET: Attrs(lws_name="serve", lws_namespace="ml", lws_uid="uid-2", **TPU),
}


def _up(attrs: Attrs) -> Observation:
    return Observation.build(expected=4, ready=4, attrs=attrs)


def _down(attrs: Attrs, **kwargs: Any) -> Observation:
    return Observation.build(expected=4, ready=0, attrs=attrs, **kwargs)


def everything_report() -> Report:
    """Every kind with every figure; node pools provisioning, up and failed; a completed JobSet."""
    kinds = {
        kind: KindReport(observations={"full": _up(attrs)}, summaries={"full": _full_summary()})
        for kind, attrs in FULL_ATTRS.items()
    }
    kinds[Kind.NODEPOOL] = KindReport(
        observations={
            "full": _up(FULL_ATTRS[Kind.NODEPOOL]),
            "provisioning": _down(Attrs(nodepool_name="pool-new", **TPU)),
            "failed": _down(Attrs(nodepool_name="pool-bad", **TPU), status="ERROR", failed=True),
        },
        summaries={
            "full": _full_summary(),
            "provisioning": Summary(
                down_time=300 * S,
                provisioning_duration=300 * S,
                provisioning_state=ProvisioningState.PROVISIONING,
            ),
            "failed": Summary(
                down_time=900 * S,
                down_time_initial=400 * S,
                provisioning_duration=400 * S,
                provisioning_state=ProvisioningState.FAILED,
            ),
        },
    )
    completed = Attrs(**{**JOBSET, "jobset_name": "done", "jobset_uid": "uid-3"})
    suspended = Attrs(**{**JOBSET, "jobset_name": "queued", "jobset_uid": "uid-4"})
    kinds[Kind.JOBSET] = KindReport(
        observations={
            "full": Observation.build(
                expected=4, ready=4, attrs=FULL_ATTRS[Kind.JOBSET], restarts=2
            ),
            "completed": _down(completed, status="Completed", expected_down=True),
            "suspended": _down(suspended, status="Suspended"),
        },
        summaries={
            "full": _full_summary(),
            "completed": _full_summary(),
            "suspended": _full_summary(),
        },
    )
    return Report(
        generated_at=T,
        kinds=kinds,
        scheduling={"pool-ok": ScheduledJob(job_name="train-slice-0", jobset_name="train")},
        observed_at={"gke": T - S, "kubernetes": T - 2 * S},
        distributions=_distributions(),
        chips_down=tuple(
            (kind.value, SHAPE, "maintenance", 960 * S) for kind in (Kind.NODEPOOL, Kind.JOBSET)
        ),
    )


SHAPE = Shape("tpu-v5-lite-podslice", "4x4", True)


def _distributions() -> tuple[tuple[SeriesKey, Histogram], ...]:
    """Every histogram of the node pools and JobSets, one observation each."""
    found = []
    for kind in (Kind.NODEPOOL, Kind.JOBSET):
        for measure in MEASURES:
            histogram = Histogram()
            histogram.add(60 * S)
            label = "success" if measure == PROVISIONING else "maintenance"
            found.append((SeriesKey(measure, kind.value, SHAPE, label), histogram))
    return tuple(found)


def scrape(report: Report, *, instruments: bool = False, prefix: str = PREFIX) -> str:
    registry = CollectorRegistry()
    registry.register(
        ReportCollector(prefix, lambda: report, build=BuildInfo("0.1.0", "abc1234", "2026-06-01"))
    )
    if instruments:
        inst = Instruments(prefix, registry)
        # Labelled instruments only show a series once a label value was used.
        for operation in ("stat", "download", "upload", "copy", "list"):
            inst.gcs_latency.labels(operation=operation).observe(0.02)
        inst.observe_gke("ListNodePools", 0.3, failed=False)
        inst.aggregation_duration.observe(0.1)
        for counter in (inst.corrupt_objects, inst.store_conflicts):
            counter.labels(kind="nodepool").inc()
        inst.count_skipped("nodepool", "invalid")
    return generate_latest(registry).decode()


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def samples_of(text: str) -> list[Sample]:
    return [
        Sample(s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


@cache
def produced(prefix: str = PREFIX) -> dict[str, frozenset[str]]:
    """Every sample name megamon produces (histogram and counter suffixes included) → the
    label names seen on it."""
    labels: dict[str, set[str]] = defaultdict(set)
    for sample in samples_of(scrape(everything_report(), instruments=True, prefix=prefix)):
        labels[sample.name].update(sample.labels)
    return {name: frozenset(keys) for name, keys in labels.items()}


def test_the_report_used_for_names_covers_every_metric_family() -> None:
    names = produced()
    for kind in Kind:
        for suffix in ("up", "tpu_chip_count", "down_time_between_recovery_mean_seconds"):
            assert f"{PREFIX}_{kind.value}_{suffix}" in names
    states = {"provisioning", "success", "failed"}
    pools = samples_of(scrape(everything_report()))
    seen = {
        s.labels["provisioning_state"]
        for s in pools
        if s.name == "megamon_nodepool_provisioning_duration_seconds"
    }
    assert seen == states
    for name in (
        "megamon_leader",
        "megamon_build_info",
        "megamon_last_report_timestamp_seconds",
        "megamon_last_observation_timestamp_seconds",
        "megamon_nodepool_job_scheduled",
        "megamon_jobset_suspended",
        "megamon_aggregation_duration_seconds_bucket",
        "megamon_gcs_latency_seconds_bucket",
        "megamon_gke_latency_seconds_count",
        "megamon_event_store_corrupt_objects_total",
        "megamon_observation_errors_total",
    ):
        assert name in names


# ------------------------------------------------------------------------------------------
# PromQL analysis.


def parse(expr: str) -> pq.Expr:
    try:
        return pq.parse(expr)
    except ValueError as err:
        pytest.fail(f"PromQL does not parse: {err}\n{expr}")


def walk(node: pq.Expr) -> Iterator[pq.Expr]:
    found: list[pq.Expr] = []
    pq.walk(node, found.append)
    return iter(found)


@dataclass
class Uses:
    metrics: set[str]
    matcher_labels: dict[str, set[str]]
    """metric → label names its selectors match on."""
    grouping_labels: set[str]
    """by/without, on/ignoring and group_left/right labels."""


def uses(expr: pq.Expr) -> Uses:
    result = Uses(set(), defaultdict(set), set())
    for node in walk(expr):
        if isinstance(node, pq.VectorSelector):
            assert node.name, f"selector without a metric name: {node}"
            result.metrics.add(node.name)
            matchers = [
                *node.matchers.matchers,
                *(m for ms in node.matchers.or_matchers for m in ms),
            ]
            result.matcher_labels[node.name].update(m.name for m in matchers)
        elif isinstance(node, pq.AggregateExpr) and node.modifier is not None:
            result.grouping_labels.update(node.modifier.labels)
        elif isinstance(node, pq.BinaryExpr) and node.modifier is not None:
            if node.modifier.matching is not None:
                result.grouping_labels.update(node.modifier.matching.labels)
            result.grouping_labels.update(node.modifier.group_labels or [])
    return result


class Names:
    """Metric names known so far: megamon's, then each recording rule's output in order."""

    def __init__(self, prefix: str = PREFIX) -> None:
        self.labels: dict[str, frozenset[str]] = dict(produced(prefix))

    def check(self, expr: str, where: str) -> frozenset[str]:
        """Parse ``expr``; every metric it names must be known and every label it uses must
        exist. Returns the labels its result may carry."""
        found = uses(parse(expr))
        unknown = sorted(found.metrics - self.labels.keys())
        assert not unknown, f"{where}: metrics megamon does not produce: {unknown}\n{expr}"
        available = set(TARGET_LABELS)
        for metric in found.metrics:
            available |= self.labels[metric]
        for metric, keys in found.matcher_labels.items():
            missing = sorted(keys - self.labels[metric] - TARGET_LABELS)
            assert not missing, f"{where}: {metric} has no label {missing}\n{expr}"
        missing = sorted(found.grouping_labels - available - {"le"})
        assert not missing, f"{where}: labels {missing} exist on none of {found.metrics}"
        return frozenset(available)

    def record(self, name: str, labels: frozenset[str]) -> None:
        self.labels[name] = labels


def test_the_analysis_catches_what_it_should() -> None:
    names = Names()
    with pytest.raises(pytest.fail.Exception, match="does not parse"):
        names.check("rate(megamon_leader)", "bad")  # a vector where a range is needed
    with pytest.raises(AssertionError, match="does not produce"):
        names.check("megamon_nodepool_upp", "typo")
    with pytest.raises(AssertionError, match="no label"):
        names.check('megamon_nodepool_provisioning_duration_seconds{provisioning_status="x"}', "x")
    with pytest.raises(AssertionError, match="exist on none"):
        names.check("sum by (tpu_accelerators) (megamon_nodepool_up)", "x")
    names.check("sum by (le) (rate(megamon_gcs_latency_seconds_bucket[5m]))", "ok")


# ------------------------------------------------------------------------------------------
# The rules: PrometheusRule, its GMP twin, the kustomizations.


@cache
def rules_doc() -> dict[str, Any]:
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def all_rules() -> list[dict[str, Any]]:
    return [rule for group in rules_doc()["spec"]["groups"] for rule in group["rules"]]


def alerts() -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for rule in all_rules() if "alert" in rule}


TEMPLATE_LABEL = re.compile(r"\$labels\.(\w+)")


def test_prometheus_rule_shape() -> None:
    doc = rules_doc()
    assert doc["apiVersion"] == "monitoring.coreos.com/v1"
    assert doc["kind"] == "PrometheusRule"
    assert doc["metadata"]["name"]
    groups = doc["spec"]["groups"]
    assert isinstance(groups, list)
    assert groups
    assert len({g["name"] for g in groups}) == len(groups), "group names must be unique"
    alert_names: list[str] = []
    for group in groups:
        assert set(group) <= {"name", "interval", "rules", "limit"}, group.keys()
        if "interval" in group:
            pq.parse_duration(group["interval"])
        assert isinstance(group["rules"], list)
        assert group["rules"]
        for rule in group["rules"]:
            assert isinstance(rule.get("expr"), str)
            assert rule["expr"].strip()
            if "record" in rule:
                assert set(rule) <= {"record", "expr", "labels"}, rule
                assert METRIC_NAME.match(rule["record"]), rule["record"]
                assert ":" in rule["record"], "recording rules follow level:metric:operations"
                continue
            assert set(rule) <= ALERT_KEYS, rule
            assert ALERT_NAME.match(rule["alert"]), rule["alert"]
            alert_names.append(rule["alert"])
            if "for" in rule:
                pq.parse_duration(rule["for"])
            assert rule["labels"]["severity"] in SEVERITIES
            annotations = rule["annotations"]
            for key in ("summary", "description", "runbook"):
                assert isinstance(annotations.get(key), str), f"{rule['alert']}: {key}"
                assert annotations[key].strip()
            for text in annotations.values():
                assert text.count("{{") == text.count("}}"), text
    assert len(set(alert_names)) == len(alert_names), "alert names must be unique"


def test_rule_expressions_parse_and_use_only_produced_metrics() -> None:
    check_rules(rules_doc(), Names())


def check_rules(doc: dict[str, Any], names: Names) -> None:
    for group in doc["spec"]["groups"]:
        for rule in group["rules"]:
            where = f"rule {rule.get('record') or rule.get('alert')}"
            available = names.check(rule["expr"], where)
            if "record" in rule:
                # Output labels: what its aggregation keeps; a fair over-approximation.
                names.record(rule["record"], available)
                continue
            for text in rule["annotations"].values():
                missing = sorted(set(TEMPLATE_LABEL.findall(text)) - available)
                assert not missing, f"{where}: annotations use labels {missing} it cannot have"


def test_the_rules_cover_the_brief() -> None:
    records = {rule["record"] for rule in all_rules() if "record" in rule}
    for kind in ("nodepool", "jobset"):
        for level in ("fleet", "tpu_accelerator_tpu_topology"):
            for figure in ("down_time_between_recovery", "up_time_between_interruption"):
                assert f"{level}:megamon_{kind}_{figure}_seconds:mean" in records
    assert {
        "MegamonNodePoolProvisioningFailed",
        "MegamonNodePoolProvisioningStuck",
        "MegamonJobSetDown",
        "MegamonReportStale",
        "MegamonNoReport",
        "MegamonNoLeader",
        "MegamonAbsent",
    } <= alerts().keys()


def test_the_gmp_rules_are_generated_from_the_prometheus_rule() -> None:
    gmp = yaml.safe_load(GMP_RULES.read_text(encoding="utf-8"))
    assert gmp["apiVersion"] == "monitoring.googleapis.com/v1"
    assert gmp["kind"] == "Rules"
    assert gmp["spec"] == rules_doc()["spec"]
    spec = importlib.util.spec_from_file_location("gmp_generate", GMP_DIR / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert GMP_RULES.read_text(encoding="utf-8") == module.render(rules_doc()), (
        "deploy/alerts/gmp/megamon-rules.yaml is stale: run "
        ".venv/bin/python deploy/alerts/gmp/generate.py"
    )


@pytest.mark.parametrize("folder", [ALERTS, GMP_DIR], ids=["prometheus-operator", "gmp"])
def test_kustomizations_list_their_rules(folder: Path) -> None:
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text(encoding="utf-8"))
    assert kustomization["kind"] == "Kustomization"
    assert kustomization["resources"] == ["megamon-rules.yaml"]
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return
    built = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, text=True, check=True, timeout=60
    )
    (resource,) = list(yaml.safe_load_all(built.stdout))
    expected = "Rules" if folder == GMP_DIR else "PrometheusRule"
    assert resource["kind"] == expected
    assert resource["metadata"]["namespace"] == kustomization["namespace"]


# ------------------------------------------------------------------------------------------
# The dashboard.


@cache
def dashboard() -> dict[str, Any]:
    doc = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def variables(doc: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in (doc or dashboard())["templating"]["list"]}


def substitute(expr: str, where: str, doc: dict[str, Any] | None = None) -> str:
    """``expr`` with Grafana's variables replaced: ranges by a duration, ours by a regex."""
    known = variables(doc)

    def value(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group)
        if name in GRAFANA_BUILTINS:
            return GRAFANA_BUILTINS[name]
        assert name in known, f"{where}: unknown variable ${name}"
        assert name != "datasource", f"{where}: $datasource inside a query"
        return ".*"

    return GRAFANA_VARIABLE.sub(value, expr)


def panels(doc: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for panel in (doc or dashboard())["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))  # collapsed rows keep theirs inside
    return out


def targets(doc: dict[str, Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    for panel in panels(doc):
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} target {target.get('refId')}", target


LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")
LABEL_VALUES = re.compile(r"^label_values\((.+),\s*(\w+)\)$")


SCOPE_VARIABLES = {
    "cluster": "cluster",
    "namespace": "namespace",
    "accelerator": "tpu_accelerator",
    "topology": "tpu_topology",
}
"""Variable → the label it selects: the scrape's cluster and megamon's namespace (every GMP
user has several clusters), then the TPU shape."""


def test_dashboard_shape() -> None:
    doc = dashboard()
    assert doc["schemaVersion"] >= 38
    assert doc["uid"]
    assert doc["title"]
    found = variables()
    datasource = found["datasource"]
    assert datasource["type"] == "datasource"
    assert datasource["query"] == "prometheus"
    for name, label in SCOPE_VARIABLES.items():
        variable = found[name]
        assert variable["type"] == "query"
        assert variable["datasource"] == DS
        match = LABEL_VALUES.match(variable["query"])
        assert match, variable["query"]
        assert match.group(2) == label
        assert variable["includeAll"]
        assert variable["allValue"] == ".*", "All must also match series without the label"
    ids = [panel["id"] for panel in panels()]
    assert len(set(ids)) == len(ids), "panel ids must be unique"
    for panel in panels():
        assert panel.get("title"), panel
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel.get("datasource") == DS, f"{panel['title']}: datasource"
        assert panel.get("targets"), f"{panel['title']}: no targets"
        refs = [target["refId"] for target in panel["targets"]]
        assert len(set(refs)) == len(refs), f"{panel['title']}: refIds must be unique"
        for target in panel["targets"]:
            assert target.get("datasource", DS) == DS, panel["title"]
            assert isinstance(target.get("expr"), str), panel["title"]
            assert target["expr"].strip(), panel["title"]


def test_dashboard_queries_parse_and_use_only_produced_metrics() -> None:
    check_dashboard(dashboard(), Names())


def check_dashboard(doc: dict[str, Any], names: Names) -> None:
    for where, target in targets(doc):
        available = names.check(substitute(target["expr"], where, doc), where)
        missing = sorted(set(LEGEND_LABEL.findall(target.get("legendFormat", ""))) - available)
        assert not missing, f"{where}: legend uses labels {missing} the query cannot have"
    for name in SCOPE_VARIABLES:
        match = LABEL_VALUES.match(variables(doc)[name]["query"])
        assert match
        available = names.check(substitute(match.group(1), name, doc), f"variable {name}")
        assert match.group(2) in available


def _selectors(expr: str) -> Iterator[pq.VectorSelector]:
    for node in walk(parse(expr)):
        if isinstance(node, pq.VectorSelector):
            yield node
        elif isinstance(node, pq.MatrixSelector):
            yield node.vector_selector


def _scoped(selector: pq.VectorSelector, variable: str) -> bool:
    return any(
        m.name == variable and m.value == f"${variable}" and m.op == pq.MatchOp.Re
        for m in selector.matchers.matchers
    )


def test_every_query_and_variable_is_scoped_by_cluster_and_namespace() -> None:
    """Grafana's variables are kept (not substituted) so the matchers themselves are seen."""
    queries = [(where, target["expr"]) for where, target in targets()]
    for name in ("accelerator", "topology"):
        match = LABEL_VALUES.match(variables()[name]["query"])
        assert match
        queries.append((f"variable {name}", match.group(1)))
    for where, query in queries:
        expr = query.replace("$__rate_interval", "5m").replace("$__range", "1d")
        for selector in _selectors(expr):
            for variable in ("cluster", "namespace"):
                assert _scoped(selector, variable), f"{where}: {selector} has no {variable}"
    namespace = LABEL_VALUES.match(variables()["namespace"]["query"])
    assert namespace and 'cluster=~"$cluster"' in namespace.group(1)


def test_the_documented_prefix_recipe_adapts_rules_and_dashboard() -> None:
    """docs/dashboards.md: `sed -E 's/\\bmegamon_/megamon_alpha_/g'` for MetricsPrefix
    megamon.alpha. Everything must then name megamon_alpha metrics only."""
    prefix = "megamon_alpha"

    def adapt(text: str) -> str:
        return re.sub(r"\bmegamon_", f"{prefix}_", text)

    rules = yaml.safe_load(adapt(RULES.read_text(encoding="utf-8")))
    board = json.loads(adapt(DASHBOARD.read_text(encoding="utf-8")))
    check_rules(rules, Names(prefix))
    check_dashboard(board, Names(prefix))
    with pytest.raises(AssertionError, match="does not produce"):
        check_dashboard(dashboard(), Names(prefix))


NODEPOOL_PANEL_SUFFIXES = (
    "up",
    "provisioning_duration_seconds",
    "interruption_count",
    "recovery_count",
    "down_time_between_recovery_seconds",
    "down_time_between_recovery_mean_seconds",
    "up_time_between_interruption_seconds",
    "up_time_between_interruption_mean_seconds",
)


def test_the_dashboard_covers_the_brief() -> None:
    used: set[str] = set()
    for where, target in targets():
        used |= uses(parse(substitute(target["expr"], where))).metrics
    for suffix in NODEPOOL_PANEL_SUFFIXES:
        assert f"megamon_nodepool_{suffix}" in used, suffix
    assert "megamon_jobset_up" in used
    for name in (
        "megamon_last_report_timestamp_seconds",
        "megamon_last_observation_timestamp_seconds",
        "megamon_aggregation_duration_seconds_bucket",
        "megamon_gcs_latency_seconds_bucket",
        "megamon_gke_latency_seconds_bucket",
        "megamon_leader",
    ):
        assert name in used, name
    exprs = " ".join(target["expr"] for _, target in targets())
    assert "delta(megamon_nodepool_interruption_count" in exprs
    assert "increase(megamon_nodepool_interruption_count" not in exprs, "a gauge: use delta()"
    assert 'provisioning_state="failed"' in exprs
    assert "count by (provisioning_state) (megamon_nodepool_provisioning_duration" in exprs


# ------------------------------------------------------------------------------------------
# The "down" alerts, evaluated on scrapes of real histories.
#
# A tiny instant-vector evaluator for the subset of PromQL those rules use (selectors, numbers,
# parentheses, arithmetic and comparisons with one-to-one matching, and/or, sum/count/max by):
# anything else raises, so it cannot silently evaluate something it does not understand.

Vector = list[Sample]


def _signature(sample: Sample) -> frozenset[tuple[str, str]]:
    return frozenset(sample.labels.items())


def _matches(sample: Sample, matcher: pq.Matcher) -> bool:
    value = sample.labels.get(matcher.name, "")
    wanted = str(matcher.value)
    op = matcher.op
    if op == pq.MatchOp.Equal:
        return value == wanted
    if op == pq.MatchOp.NotEqual:
        return value != wanted
    if op == pq.MatchOp.Re:
        return re.fullmatch(wanted, value) is not None
    if op == pq.MatchOp.NotRe:
        return re.fullmatch(wanted, value) is None
    raise NotImplementedError(op)


def _divide(a: float, b: float) -> float:
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _divide,
}
COMPARISON: dict[str, Callable[[float, float], bool]] = {
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def evaluate(node: pq.Expr, data: list[Sample]) -> Vector | float:
    if isinstance(node, pq.NumberLiteral):
        return float(node.val)
    if isinstance(node, pq.ParenExpr):
        return evaluate(node.expr, data)
    if isinstance(node, pq.VectorSelector):
        assert node.offset is None
        assert not node.matchers.or_matchers
        return [
            s
            for s in data
            if s.name == node.name and all(_matches(s, m) for m in node.matchers.matchers)
        ]
    if isinstance(node, pq.AggregateExpr):
        return _aggregate(node, data)
    if isinstance(node, pq.BinaryExpr):
        return _binary(node, data)
    raise NotImplementedError(type(node).__name__)


def _aggregate(node: pq.AggregateExpr, data: list[Sample]) -> Vector:
    op = str(node.op)
    assert op in {"sum", "count", "max"}, op
    keys: list[str] = []
    if node.modifier is not None:
        assert node.modifier.type == pq.AggModifierType.By
        keys = list(node.modifier.labels)
    vector = evaluate(node.expr, data)
    assert isinstance(vector, list)
    groups: dict[tuple[tuple[str, str], ...], list[float]] = defaultdict(list)
    for s in vector:
        groups[tuple((k, s.labels[k]) for k in keys if k in s.labels)].append(s.value)
    folds: dict[str, Callable[[list[float]], float]] = {
        "sum": math.fsum,
        "count": lambda values: float(len(values)),
        "max": max,
    }
    return [Sample("", dict(key), folds[op](values)) for key, values in groups.items()]


def _binary(node: pq.BinaryExpr, data: list[Sample]) -> Vector | float:
    op = str(node.op)
    modifier = node.modifier
    assert modifier is None or (modifier.matching is None and not modifier.return_bool), node
    lhs, rhs = evaluate(node.lhs, data), evaluate(node.rhs, data)
    if op in {"and", "or", "unless"}:
        assert isinstance(lhs, list)
        assert isinstance(rhs, list)
        right = {_signature(s) for s in rhs}
        if op == "and":
            return [s for s in lhs if _signature(s) in right]
        if op == "unless":
            return [s for s in lhs if _signature(s) not in right]
        left = {_signature(s) for s in lhs}
        return lhs + [s for s in rhs if _signature(s) not in left]
    if isinstance(lhs, float) and isinstance(rhs, float):
        assert op in ARITHMETIC, "scalar comparisons need bool"
        return ARITHMETIC[op](lhs, rhs)
    pairs: list[tuple[Sample, float, float]]
    if isinstance(rhs, float):
        assert isinstance(lhs, list)
        pairs = [(s, s.value, rhs) for s in lhs]
    elif isinstance(lhs, float):
        pairs = [(s, lhs, s.value) for s in rhs]
    else:
        by_signature = {_signature(s): s for s in rhs}
        assert len(by_signature) == len(rhs), "many-to-one matching is not supported"
        pairs = [
            (s, s.value, by_signature[_signature(s)].value)
            for s in lhs
            if _signature(s) in by_signature
        ]
    if op in ARITHMETIC:
        return [Sample("", s.labels, ARITHMETIC[op](a, b)) for s, a, b in pairs]
    # A filter keeps the vector's sample as it is (the lhs one when both are vectors).
    return [s for s, a, b in pairs if COMPARISON[op](a, b)]


def alert_values(alert: str, data: list[Sample]) -> dict[str, float]:
    """The alert's firing series, by resource name (node pool or JobSet), with their values."""
    result = evaluate(parse(alerts()[alert]["expr"]), data)
    assert isinstance(result, list)
    return {s.labels.get("nodepool_name") or s.labels["jobset_name"]: s.value for s in result}


def up(minute: int) -> UpEvent:
    return UpEvent(up=True, ts=T + minute * M)


def down(minute: int, *, ed: bool = False, failed: bool = False) -> UpEvent:
    return UpEvent(up=False, ts=T + minute * M, expected_down=ed, failed=failed)


def scrape_histories(kind: Kind, histories: dict[str, tuple[list[UpEvent], int]]) -> list[Sample]:
    """A scrape of resources of ``kind`` whose latest observation matches their last event,
    summarized at ``now`` (minutes)."""
    observations: dict[str, Observation] = {}
    summaries: dict[str, Summary] = {}
    for name, (events, now) in histories.items():
        last = events[-1]
        if kind == Kind.NODEPOOL:
            attrs = Attrs(nodepool_name=name, **TPU)
        else:
            attrs = Attrs(**{**JOBSET, "jobset_name": name, "jobset_uid": f"uid-{name}"})
        observations[name] = Observation.build(
            expected=4,
            ready=4 if last.up else 0,
            expected_down=last.expected_down,
            failed=last.failed,
            attrs=attrs,
        )
        summaries[name] = summarize(EventRecord.of(events), T + now * M)
    report = Report(
        generated_at=T,
        kinds={kind: KindReport(observations=observations, summaries=summaries)},
    )
    return samples_of(scrape(report))


def test_node_pool_down_fires_only_on_an_unexpected_outage_past_30_minutes() -> None:
    data = scrape_histories(
        Kind.NODEPOOL,
        {
            # Interrupted at minute 100, still down at 200: a 100-minute outage.
            "interrupted": ([down(0), up(10), down(100)], 200),
            "interrupted-recently": ([down(0), up(10), down(100)], 110),
            # A planned down period (stop/delete) is not an outage, however long.
            "deleting": ([down(0), up(10), down(100, ed=True)], 200),
            "recovered": ([down(0), up(10), down(100), up(150)], 300),
            # Earlier closed down periods, planned or not, are not part of the current one.
            "after-maintenance": ([down(0), up(10), down(50, ed=True), up(60), down(100)], 200),
            "after-recovery": ([down(0), up(10), down(30), up(40), down(100)], 200),
            # Never up: the provisioning alerts' business.
            "provisioning": ([down(0)], 200),
            "failed": ([down(0), down(5, failed=True)], 200),
        },
    )
    assert alert_values("MegamonNodePoolDown", data) == {
        "interrupted": 6000.0,
        "after-maintenance": 6000.0,
        "after-recovery": 6000.0,
    }
    assert alert_values("MegamonNodePoolProvisioningFailed", data) == {"failed": 300.0}
    assert alert_values("MegamonNodePoolProvisioningStuck", data) == {"provisioning": 12_000.0}


def test_jobset_down_ignores_completed_jobsets() -> None:
    data = scrape_histories(
        Kind.JOBSET,
        {
            "failed": ([down(0), up(10), down(100)], 200),
            "completed": ([down(0), up(10), down(100, ed=True)], 200),
            "restarted-quickly": ([down(0), up(10), down(100), up(105)], 200),
            "flapping": ([down(0), up(10), down(100), up(105), down(190)], 200),
            "waiting-for-capacity": ([down(0)], 200),
        },
    )
    assert alert_values("MegamonJobSetDown", data) == {"failed": 6000.0}


def test_recorded_mttr_and_mtbi_are_event_weighted_means() -> None:
    data = scrape_histories(
        Kind.NODEPOOL,
        {
            # TTRs 10 and 30 min (2 recoveries); up periods 20 and 40 min before interruptions.
            "a": ([down(0), up(10), down(30), up(40), down(80), up(110)], 200),
            # TTR 60 min (1 recovery); up 90 min before its interruption.
            "b": ([down(0), up(10), down(100), up(160)], 200),
        },
    )
    rules = {rule["record"]: rule["expr"] for rule in all_rules() if "record" in rule}

    def recorded(name: str) -> float:
        result = evaluate(parse(rules[name]), data)
        assert isinstance(result, list)
        (sample,) = result
        return sample.value

    # Σ TTR / Σ recoveries = (10 + 30 + 60) / 3 minutes, not the mean of the pools' means.
    mttr = recorded("fleet:megamon_nodepool_down_time_between_recovery_seconds:mean")
    assert mttr == pytest.approx(100 * 60 / 3)
    mtbi = recorded("fleet:megamon_nodepool_up_time_between_interruption_seconds:mean")
    assert mtbi == pytest.approx((20 + 40 + 90) * 60 / 3)
    by_tpu = "tpu_accelerator_tpu_topology:megamon_nodepool_down_time_between_recovery_seconds:mean"
    assert recorded(by_tpu) == pytest.approx(mttr)

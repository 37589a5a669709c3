"""The alert and recording rules of deploy/alerts, run by Prometheus's own ``promtool``.

``promtool check rules`` must accept the rule groups of the PrometheusRule and of its GMP twin
(lint included), and ``promtool test rules`` runs deploy/alerts/tests/*.test.yaml, which show
every alert firing and not firing and every recording rule computing its figure. A rule that
cannot fire, or fires on the routine case, fails here. The tests are skipped, with the reason
in pytest's summary, when promtool is not installed (CI installs Debian's ``prometheus``
package in .ci/run).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from test.deploy.test_monitoring_rules import everything_report, scrape

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "alerts"
RULE_FILES = {
    "prometheus-operator": ALERTS / "megamon-rules.yaml",
    "gmp": ALERTS / "gmp" / "megamon-rules.yaml",
}
TESTS = sorted((ALERTS / "tests").glob("*.test.yaml"))
KEPT_ANNOTATIONS = ("summary",)

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not found: install Debian's `prometheus` package (.ci/run does) to run "
    "the alert rule unit tests",
)


def groups(path: Path) -> list[dict[str, Any]]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = doc["spec"]["groups"]
    return found


def for_unit_tests(rule_groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The groups with only the annotations the unit tests state (see the test file)."""
    result = []
    for group in rule_groups:
        rules = []
        for original in group["rules"]:
            rule = dict(original)
            if "annotations" in rule:
                kept = {k: v for k, v in rule["annotations"].items() if k in KEPT_ANNOTATIONS}
                rule["annotations"] = kept
            rules.append(rule)
        result.append({**group, "rules": rules})
    return result


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def alerts_in(rule_groups: list[dict[str, Any]]) -> set[str]:
    return {rule["alert"] for group in rule_groups for rule in group["rules"] if "alert" in rule}


def test_every_alert_is_shown_firing_and_not_firing() -> None:
    """Static, so it holds without promtool too: a new alert needs its two cases."""
    firing: set[str] = set()
    quiet: set[str] = set()
    records: set[str] = set()
    for path in TESTS:
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
            for check in case.get("promql_expr_test", []):
                records.add(check["expr"])
    rule_groups = groups(RULE_FILES["prometheus-operator"])
    expected = alerts_in(rule_groups)
    assert expected, "no alerts found"
    assert sorted(expected - firing) == [], "alerts never shown firing"
    assert sorted(expected - quiet) == [], "alerts never shown not firing"
    recorded = {rule["record"] for g in rule_groups for rule in g["rules"] if "record" in rule}
    assert sorted(recorded - records) == [], "recording rules without a test"


@needs_promtool
@pytest.mark.parametrize("flavour", sorted(RULE_FILES))
def test_promtool_accepts_the_rendered_rules(flavour: str, tmp_path: Path) -> None:
    rendered = tmp_path / "rules.yaml"
    rendered.write_text(yaml.safe_dump({"groups": groups(RULE_FILES[flavour])}), encoding="utf-8")
    result = promtool("check", "rules", "--lint=all", "--lint-fatal", str(rendered), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


@needs_promtool
@pytest.mark.parametrize("flavour", sorted(RULE_FILES))
@pytest.mark.parametrize("test_file", TESTS, ids=[p.name for p in TESTS])
def test_promtool_unit_tests_pass(flavour: str, test_file: Path, tmp_path: Path) -> None:
    rule_groups = for_unit_tests(groups(RULE_FILES[flavour]))
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups}), "utf-8")
    shutil.copy(test_file, tmp_path / test_file.name)
    result = promtool("test", "rules", test_file.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_a_rule_that_cannot_fire_fails_the_unit_tests(tmp_path: Path) -> None:
    """The harness itself: the same tests against a MegamonNoReport that never fires."""
    rule_groups = for_unit_tests(groups(RULE_FILES["prometheus-operator"]))
    for group in rule_groups:
        for rule in group["rules"]:
            if rule.get("alert") == "MegamonNoReport":
                rule["expr"] = (
                    "absent(megamon_last_report_timestamp_seconds) and on () vector(0) > 1"
                )
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups}), "utf-8")
    shutil.copy(TESTS[0], tmp_path / TESTS[0].name)
    result = promtool("test", "rules", TESTS[0].name, cwd=tmp_path)
    assert result.returncode != 0
    assert "MegamonNoReport" in result.stdout + result.stderr


@needs_promtool
def test_promtool_check_metrics_flags_only_the_documented_count_gauges() -> None:
    """docs/metrics.md ("The `…_count` gauges"): the Go megamon's names, and nothing else."""
    exposition = scrape(everything_report(), instruments=True)
    result = subprocess.run(
        [str(PROMTOOL), "check", "metrics"],
        input=exposition,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    flagged = set()
    for line in (result.stdout + result.stderr).splitlines():
        name, _, problem = line.partition(" ")
        assert problem == 'non-histogram and non-summary metrics should not have "_count" suffix', (
            line
        )
        flagged.add(name)
    expected = {
        f"megamon_{kind}_{suffix}"
        for kind in ("nodepool", "jobset", "jobset_nodes", "slice", "leaderworkerset")
        for suffix in ("interruption_count", "recovery_count", "tpu_chip_count")
    }
    assert flagged == expected
    assert re.search(r"#\s*TYPE megamon_nodepool_interruption_count gauge", exposition)

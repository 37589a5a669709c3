"""The fleet benchmark runs end to end at size S and its figures make sense.

Timings are not asserted (they depend on the machine); what is checked is that every probe
reports, that each side saw the whole fleet, that the fast /metrics encoder wrote what
prometheus_client writes, and that the figures are consistent with each other.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from internal.bench import fleet, fleet_objects

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

SIZE = fleet_objects.SIZES["S"]


def test_the_fleet_benchmark_measures_a_size_s_fleet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figures.json"
    args = ["--size", "S", "--cycles", "2", "--reference", "--skip-tuned", "--json", str(out)]
    assert fleet.main(args) == 0
    figures = json.loads(out.read_text())["S"]

    assert figures["server"]["nodes"] == SIZE.nodes
    assert figures["server"]["pools"] == SIZE.pools

    sync = figures["sync"]
    assert sync["synced"]
    assert (sync["nodes"], sync["jobsets"], sync["leader_pods"]) == (
        SIZE.nodes,
        SIZE.jobsets,
        SIZE.jobsets,
    )
    assert sync["cpu_s"] > 0
    assert sync["wall_s"] > 0
    assert sync["peak_rss_mb"] > 0

    listing = figures["list"]
    assert listing["nodes"] == SIZE.nodes
    # The client's model objects weigh more than megamon's sync at its peak and once settled.
    # (Peaks are VmHWM, the probe's own: ru_maxrss carried pytest's peak into the probes, so
    # in a full run the sync once "peaked" at 467 MB instead of its 152 MB.)
    assert listing["peak_rss_mb"] > sync["peak_rss_mb"] >= sync["settled_rss_mb"]

    cycles = figures["cycles"]
    assert cycles["pools"] == SIZE.pools
    assert cycles["identical"]  # the fast encoder wrote what prometheus_client writes
    resources = SIZE.pools + 2 * SIZE.jobsets  # node pools, JobSets, JobSet nodes
    # Per resource: its series (up to ~15); per kind and shape: the distributions' buckets.
    assert resources * 5 <= cycles["samples"] <= resources * 25
    assert 0 < cycles["metrics_gzip_bytes"] < cycles["metrics_bytes"]
    assert cycles["store_bytes"] > 0  # 1% of the nodes flipped: some histories grew
    # The seeded history was all up: no event, but the first cycle records every resource's
    # attributes (the Go-format files carry none).
    assert cycles["first_cycle"]["event_bytes"] == 0 < cycles["first_cycle"]["store_bytes"]
    assert cycles["startup_wall_s"] > 0 and cycles["startup_peak_rss_mb"] > 0
    for key in ("cycle_cpu_s", "aggregate_cpu_s", "render_cpu_s", "persist_cpu_s"):
        assert cycles[key] > 0, key
    assert cycles["cycle_cpu_s"] == pytest.approx(
        cycles["aggregate_cpu_s"] + cycles["persist_cpu_s"] + cycles["render_cpu_s"], rel=0.5
    )

    printed = capsys.readouterr().out
    assert "(b)/(a) time" in printed and "S: 4,000 nodes" in printed


def test_the_huge_slices_case_checks_a_notready_node_of_each_in_the_next_cycle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """S and S+huge in one run: the fleet with a 1,536-node v5p pool and a 2,304-node
    TPU7x pool (sized from its workload policy), whose probe asserts that one NotReady node
    of each is seen in the next cycle; and the comparison of the two steady cycles."""
    out = tmp_path / "figures.json"
    args = ["--size", "S", "--skip-list", "--skip-tuned", "--cycles", "1", "--json", str(out)]
    assert fleet.main(args) == 0
    plain = json.loads(out.read_text())["S"]
    huge_size = fleet_objects.SIZES["S+huge"]
    args[1] = "S+huge"
    assert fleet.main(args) == 0
    huge = json.loads(out.read_text())["S+huge"]
    assert huge["server"]["nodes"] == huge_size.total_nodes == SIZE.nodes + 1_536 + 2_304
    assert huge["sync"]["jobsets"] == huge_size.total_jobsets
    assert huge["cycles"]["pools"] == huge_size.total_pools
    assert huge["cycles"]["huge_checked"] == ["huge-v5p", "huge-tpu7x"]
    assert plain["cycles"]["huge_checked"] == []
    capsys.readouterr()

    results = [
        fleet.SizeResult(SIZE, plain["server"], cycles=plain["cycles"]),
        fleet.SizeResult(huge_size, huge["server"], cycles=huge["cycles"]),
    ]
    compared = fleet.huge_comparison(results)
    assert "| nodes | 4,000 | 7,840 | +96.0% |" in compared
    assert "steady cycle CPU (median)" in compared
    assert "(asserted): huge-v5p, huge-tpu7x." in compared


def test_the_regular_pools_of_l_churn_alike_with_or_without_the_huge_slices() -> None:
    """The comparison measures the huge slices, not another churn: L+huge's regular pools
    see exactly L's NotReady nodes, and the huge pools 1% of their own."""
    plain = fleet_objects.flip_orders(fleet_objects.SIZES["L"])
    huge = fleet_objects.flip_orders(fleet_objects.SIZES["L+huge"])
    assert len(plain) == 1 and huge[0] == plain[0]
    assert len(huge[1]) == 1_536 + 2_304
    for cycle in (1, 2, 5):
        assert fleet_objects.flipped(huge[0], cycle) == fleet_objects.flipped(plain[0], cycle)
        assert len(fleet_objects.flipped(huge[1], cycle)) == 38


def test_the_history_table_gives_each_gc_setting_its_rows_and_ratio() -> None:
    """``--histories`` measured with both collector settings: a row per history length and
    setting, and each setting's ratio from the shortest history to the longest."""

    def figures(startup: float, cycle: float) -> dict[str, float]:
        return {"startup_wall_s": startup, "cycle_cpu_s": cycle, "peak_rss_mb": 500.0}

    result = fleet.SizeResult(fleet_objects.SIZES["M"], {})
    result.by_history = {20: figures(1.0, 0.4), 1000: figures(3.0, 0.5)}
    result.by_history_tuned = {20: figures(1.0, 0.2), 1000: figures(2.0, 0.3)}
    rows = fleet.history_table([result]).splitlines()[2:]
    assert [row.split(" | ")[:3] for row in rows] == [
        ["| M", "default", "20"],
        ["| M", "default", "1,000"],
        ["| M", "default", "1,000 / 20"],
        ["| M", "recommended", "20"],
        ["| M", "recommended", "1,000"],
        ["| M", "recommended", "1,000 / 20"],
    ]
    assert rows[2].split(" | ")[3] == "3.00×" and rows[2].split(" | ")[6] == "1.25×"
    assert rows[5].split(" | ")[3] == "2.00×" and rows[5].split(" | ")[6] == "1.50×"

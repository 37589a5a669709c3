"""The columnar cache: segments converted to Parquet once, and reports over it equal to
reports that convert everything afresh, as segments are added, expire or change."""

from __future__ import annotations

from pathlib import Path

import orjson

from megamon.domain import timestamps
from megamon.domain.kinds import Kind
from megamon.fleet.cache import wanted
from megamon.fleet.columnar import MANIFEST, history_directory
from megamon.fleet.engine import History, fleet_report
from megamon.fleet.model import FleetReport
from megamon.summary.availability import Window
from test.fleet.histories import Lifetime, heartbeat, log_line, write_log, write_segments

T0 = timestamps.parse("2026-06-01T00:00:00Z")
H = 3600 * timestamps.NANOS_PER_SECOND
SHAPE = {"tpuAccelerator": "tpu-v6e-slice", "tpuTopology": "4x4", "tpuChipCount": 16}
WINDOW = Window(now=T0 + 48 * H)


def _history(root: Path) -> None:
    lifetimes = [
        Lifetime(
            Kind.NODEPOOL,
            f"np-{n}",
            ((T0 + n * H, 0), (T0 + (n + 1) * H, 1), (T0 + (n + 5) * H, 4)),
            {**SHAPE, "nodePoolName": f"np-{n}"},
            retired_at=T0 + 20 * H if n == 0 else None,
        )
        for n in range(6)
    ]
    # np-0 again after its retirement, with the same attributes: its first lifetime keeps them.
    lifetimes.append(
        Lifetime(
            Kind.NODEPOOL,
            "np-0",
            ((T0 + 21 * H, 1),),
            {**SHAPE, "nodePoolName": "np-0"},
        )
    )
    coverage = {Kind.NODEPOOL: [(T0, T0 + 10 * H), (T0 + 12 * H, T0 + 48 * H)]}
    write_log(root, "east", lifetimes, archive=False, coverage=coverage)


def _report(root: Path, cache: Path | None) -> FleetReport:
    return fleet_report([History("east", root)], [Kind.NODEPOOL], WINDOW, columnar_dir=cache)


def _batches(cache: Path, root: Path) -> list[str]:
    here = history_directory(cache, root) / "nodepool"
    return sorted(p.name for p in here.glob("batch-*.parquet"))


def test_a_warm_cache_gives_the_same_report_without_converting(tmp_path: Path) -> None:
    root, cache = tmp_path / "east", tmp_path / "cache"
    _history(root)
    fresh = _report(root, None)
    assert {f.resource.name for f in fresh.resources} == {f"np-{n}" for n in range(6)}
    assert any(r.times.unobserved for r in fresh.resources)
    assert _report(root, cache) == fresh
    manifest = (history_directory(cache, root) / "nodepool" / MANIFEST).read_bytes()
    batches = _batches(cache, root)
    assert _report(root, cache) == fresh
    assert _batches(cache, root) == batches
    assert (history_directory(cache, root) / "nodepool" / MANIFEST).read_bytes() == manifest


def test_new_segments_are_converted_alone(tmp_path: Path) -> None:
    root, cache = tmp_path / "east", tmp_path / "cache"
    _history(root)
    _report(root, cache)
    before = _batches(cache, root)
    later = [
        log_line("east", Kind.NODEPOOL, "np-9", T0 + 30 * H, 1, {**SHAPE, "nodePoolName": "x"}),
        heartbeat("east", Kind.NODEPOOL, T0 + 12 * H, T0 + 48 * H),
    ]
    day = root / "log" / "kind=nodepool" / "date=2026-06-02"
    write_segments(tmp_path / "later", Kind.NODEPOOL, later)
    day.mkdir(parents=True, exist_ok=True)
    for segment in (tmp_path / "later").rglob("*.ndjson"):
        segment.rename(day / f"9{segment.name[1:]}")
    after = _batches(cache, root)
    assert after == before  # nothing converted until a report runs
    report = _report(root, cache)
    assert _batches(cache, root)[:-1] == before and len(_batches(cache, root)) == len(before) + 1
    assert report == _report(root, None)
    assert "x" in {f.resource.name for f in report.resources}


def test_an_expired_or_changed_segment_drops_its_batch(tmp_path: Path) -> None:
    root, cache = tmp_path / "east", tmp_path / "cache"
    _history(root)
    _report(root, cache)
    segments = sorted(root.rglob("*.ndjson"))
    segments[0].unlink()  # a lifecycle rule expired the oldest segment
    assert _report(root, cache) == _report(root, None)
    changed = _report(root, cache)
    with segments[-1].open("ab") as f:  # a copy rewritten (not something megamon does)
        f.write(orjson.dumps(log_line("east", Kind.NODEPOOL, "np-5", T0 + 40 * H, 1, None)))
        f.write(b"\n")
    assert _report(root, cache) == _report(root, None) != changed


def test_the_cache_mirrors_what_the_report_reads() -> None:
    """Segments and snapshot marks (the spans megamon observed) are fetched; the lease and
    the quarantine are not."""
    assert wanted("log/kind=nodepool/date=2026-06-01/0000000000000001.ndjson")
    assert wanted("log/snapshots/node-pools.json")
    assert wanted("node-pools.json") and wanted("reports/latest.json")
    assert not wanted("log/snapshots/notes.txt")
    assert not wanted("log/lease.json")
    assert not wanted("quarantine/log/kind=nodepool/x.ndjson.corrupt")


def test_a_damaged_manifest_is_converted_again(tmp_path: Path) -> None:
    root, cache = tmp_path / "east", tmp_path / "cache"
    _history(root)
    fresh = _report(root, cache)
    (history_directory(cache, root) / "nodepool" / MANIFEST).write_bytes(b'{"segments": {"x": 1}}')
    assert _report(root, cache) == fresh


def test_no_history_is_an_empty_report(tmp_path: Path) -> None:
    empty = fleet_report([], list(Kind), WINDOW, columnar_dir=tmp_path)
    assert empty.resources == () and empty.fleet_aggregates == ()
    bare = fleet_report([History("bare", tmp_path / "bare")], list(Kind), WINDOW)
    assert bare.resources == () and bare.clusters == ("bare",)

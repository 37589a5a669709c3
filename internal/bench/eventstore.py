"""Benchmark: event-log cycles over 5,000 keys against the GCS emulator.

A node-pool kind of 5,000 keys, each with a short history, lives in a fake-gcs-server bucket;
requests go through the fault proxy (no faults armed) so they can be counted. Measured per
cycle: wall time, downloads, uploads and bytes uploaded, for a cycle where nothing changed
and for one where 1% of the keys flipped. Run with ``make bench`` or
``python -m internal.bench.eventstore [--keys N --cycles C]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from typing import Any

from internal.faultproxy import FaultProxy
from internal.gcsemu.client import make_storage_client
from internal.gcsemu.emulator import GcsEmulator
from megamon.domain.kinds import Kind
from megamon.domain.observations import Attrs, Observation
from megamon.recording.eventlog import EventLog
from megamon.stores.gcs import GcsEventStore

T0 = 1_780_272_000 * 10**9
CYCLE_NS = 10 * 10**9
PATH = "megamon/clusters/b"


@dataclass
class CycleFigures:
    seconds: float
    stats: int
    downloads: int
    uploads: int
    bytes_up: int


def _observations(keys: int, flipped: set[int], cycle: int) -> dict[str, Observation]:
    result = {}
    for i in range(keys):
        down = i in flipped and cycle % 2 == 1
        result[f"tpu-pool-{i:05d}"] = Observation.build(
            expected=64,
            ready=0 if down else 64,
            attrs=Attrs(nodepool_name=f"tpu-pool-{i:05d}", tpu_topology="16x16"),
        )
    return result


def _log_bytes(bucket: Any) -> int:
    """The bytes of every object the history holds (segments, lease, snapshots)."""
    return sum(int(b.size) for b in bucket.list_blobs(prefix=f"{PATH}/"))


def _cycle(
    log: EventLog, proxy: FaultProxy, batch: dict[str, Observation], now: int, bucket: Any
) -> CycleFigures:
    before = _log_bytes(bucket)
    proxy.reset()
    start = time.perf_counter()
    log.append({Kind.NODEPOOL: batch}, now)
    seconds = time.perf_counter() - start
    records = proxy.records
    downloads = sum(1 for r in records if r.method == "GET" and "alt=media" in r.target)
    stats = sum(1 for r in records if r.method == "GET") - downloads
    uploads = sum(1 for r in records if r.method == "POST" and "upload" in r.target)
    size = _log_bytes(bucket) - before if uploads else 0  # new objects only: immutable log
    return CycleFigures(seconds, stats, downloads, uploads, size)


def run(keys: int, cycles: int) -> dict[str, CycleFigures]:
    with GcsEmulator() as emulator, FaultProxy(emulator.endpoint) as proxy:
        emulator.create_bucket("bench")
        store = GcsEventStore(make_storage_client(proxy.endpoint), "bench", PATH)
        log = EventLog(store, [Kind.NODEPOOL])
        flipped = set(range(0, keys, 100))  # 1%
        bucket = make_storage_client(emulator.endpoint).bucket("bench")
        log.append({Kind.NODEPOOL: _observations(keys, set(), 0)}, T0)
        quiet, changed = [], []
        for c in range(1, cycles + 1):
            now = T0 + c * CYCLE_NS
            batch = _observations(keys, flipped, c)
            changed.append(_cycle(log, proxy, batch, now, bucket))
            quiet.append(_cycle(log, proxy, batch, now + CYCLE_NS // 2, bucket))
    return {"unchanged": _median(quiet), "1% changed": _median(changed)}


def _median(figures: list[CycleFigures]) -> CycleFigures:
    return CycleFigures(
        statistics.median(f.seconds for f in figures),
        max(f.stats for f in figures),
        max(f.downloads for f in figures),
        max(f.uploads for f in figures),
        int(statistics.median(f.bytes_up for f in figures)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--cycles", type=int, default=10)
    args = parser.parse_args()
    results = run(args.keys, args.cycles)
    print(f"{args.keys} keys, median of {args.cycles} cycles, wall time")
    print(
        f"{'cycle':12} {'ms':>8} {'metadata':>9} {'downloads':>10} {'uploads':>8} {'bytes up':>10}"
    )
    for name, f in results.items():
        print(
            f"{name:12} {f.seconds * 1000:8.1f} {f.stats:9} {f.downloads:10} {f.uploads:8} "
            f"{f.bytes_up:10,}"
        )


if __name__ == "__main__":
    main()

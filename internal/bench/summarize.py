"""Benchmark: parse and summarize an event file of 10,000 keys x 200 events.

Two files are measured. "cycle-shared" is what megamon writes: every event of a cycle carries
that cycle's one ``now``, so a timestamp's text repeats across keys. "all-distinct" gives every
event its own timestamp, the worst case for the parser. Summarizing runs over records already
parsed. Run with ``make bench`` or ``python -m internal.bench.summarize [--keys N --events M]``.
"""

from __future__ import annotations

import argparse
import random
import time

from megamon.codec import history as codec
from megamon.domain.events import FLAG_EXPECTED_DOWN, FLAG_FAILED, FLAG_UP, EventRecord
from megamon.summary.summarizing import summarize_all

T0 = 1_777_000_000 * 1_000_000_000
CYCLE_NS = 10 * 1_000_000_000


def _record(rng: random.Random, events: int, distinct: bool) -> EventRecord:
    """Alternating down/up periods, some expected, some failed, on the cycle grid."""
    ts: list[int] = []
    flags = bytearray()
    cycle = rng.randrange(100)
    for i in range(events):
        cycle += rng.randrange(1, 60)
        jitter = rng.randrange(1_000_000_000) if distinct else 123_456_789
        ts.append(T0 + cycle * CYCLE_NS + jitter)
        if i % 2:
            flags.append(FLAG_UP)
        else:
            extra = FLAG_EXPECTED_DOWN if rng.random() < 0.1 else 0
            flags.append(extra | (FLAG_FAILED if rng.random() < 0.05 else 0))
    return EventRecord.trusted(tuple(ts), bytes(flags))


def build_file(keys: int, events: int, distinct: bool) -> bytes:
    rng = random.Random(7)
    records = {f"tpu-pool-{i:05d}": _record(rng, events, distinct) for i in range(keys)}
    return codec.encode_event_file(records)


def _best_of(runs: int, fn: object) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best


def measure(keys: int, events: int, distinct: bool, runs: int) -> dict[str, float]:
    data = build_file(keys, events, distinct)
    parse_s = _best_of(runs, lambda: codec.decode_event_file(data, "bench"))
    records = codec.decode_event_file(data, "bench")
    now = T0 + 10**18 // 10**3
    summarize_s = _best_of(runs, lambda: summarize_all(records, now))
    encode_s = _best_of(runs, lambda: codec.encode_event_file(records))
    total = keys * events
    return {
        "file_mb": len(data) / 1e6,
        "parse_mb_s": len(data) / 1e6 / parse_s,
        "parse_events_s": total / parse_s,
        "summarize_events_s": total / summarize_s,
        "encode_mb_s": len(data) / 1e6 / encode_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.keys} keys x {args.events} events, best of {args.runs}, CPU time, one core")
    print(
        f"{'file':14} {'MB':>7} {'parse MB/s':>11} {'parse ev/s':>12} {'summ. ev/s':>12} "
        f"{'encode MB/s':>12}"
    )
    for name, distinct in (("cycle-shared", False), ("all-distinct", True)):
        r = measure(args.keys, args.events, distinct, args.runs)
        print(
            f"{name:14} {r['file_mb']:7.1f} {r['parse_mb_s']:11.1f} {r['parse_events_s']:12,.0f} "
            f"{r['summarize_events_s']:12,.0f} {r['encode_mb_s']:12.1f}"
        )


if __name__ == "__main__":
    main()

"""Write docs/reliability.md from the fault suite's own output.

MEGAMON_RELIABILITY_OUT=.reliability.jsonl .venv/bin/pytest test/integration/faults
.venv/bin/python -m internal.tools.reliability .reliability.jsonl > docs/reliability.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HEAD = """# Reliability

megamon's numbers feed reliability reviews, so a restart, a flaky bucket or an API outage
must not change them. The fault suite (`test/integration/faults/`, `make faults` and CI, one
scenario at a time; longer stalls with `make chaos`) plays one scripted fleet scenario — a node pool
provisioning and coming up, a node going NotReady and back, a JobSet becoming ready then
failing, a node pool created in GKE `ERROR` — once without faults and once per fault, with
`megamon run` as a real process against the GKE and Kubernetes emulators and a
fake-gcs-server bucket behind a fault proxy. It then compares the two histories: the same
transitions per resource, none lost, none duplicated, timestamps within two aggregation
cycles of the clean run.

This table is written from the suite's own output (`internal/tools/reliability.py`).

| fault | what megamon did | transitions | lost | duplicated | largest time offset |
|---|---|---:|---:|---:|---:|
"""


TAIL = (Path(__file__).parent / "reliability_tail.md").read_text()
"""The hand-written part: bad input and security, with where each is tested."""


def main() -> int:
    rows = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    out = [HEAD]
    for row in rows:
        fault = row["case"].removeprefix("test_").replace("_", " ")
        status = "" if row["passed"] else " **(failed)**"
        out.append(
            f"| {fault}{status} | {row['doc']} | {row['transitions']} | {row['lost']} | "
            f"{row['duplicated']} | {row['max_offset_s']:.2f} s |\n"
        )
    out.append(TAIL)
    sys.stdout.write("".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

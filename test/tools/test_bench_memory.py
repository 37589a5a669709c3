"""A benchmark's child measures its own peak memory, not its parent's."""

from __future__ import annotations

import subprocess
import sys

from internal.bench.memory import peak_rss_mb

CHILD = "from internal.bench.memory import peak_rss_mb; print(peak_rss_mb())"


def test_a_child_of_a_large_process_reports_its_own_peak() -> None:
    ballast = bytearray(300 * 1024 * 1024)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1  # resident, not only reserved
    assert peak_rss_mb() > 300
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    assert float(done.stdout) < 150, "a small child reported its parent's 300 MB"
    del ballast

"""``make demo`` runs on a fresh machine: emulators, the fleet, megamon, the live table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_demo_shows_the_fleet_and_stops_cleanly(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "internal.demo",
            "--duration",
            "25",
            "--speed",
            "600",
            "--workdir",
            str(tmp_path),
            "--metrics-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    last = done.stdout.rsplit("megamon demo —", 1)[-1]
    assert "nodepool        v5p-16-stuck" in last and " failed " in last
    assert "nodepool        v5e-256-pretrain" in last
    assert "jobset          llm-pretrain" in last
    assert (tmp_path / "megamon-data" / "node-pools.json").exists()
    assert (tmp_path / "megamon-data" / "reports" / "latest.json").exists()

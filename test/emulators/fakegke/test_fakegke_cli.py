"""``python -m internal.fakegke``: starts, serves the real client, stops on Ctrl-C or SIGTERM."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud.container_v1 import NodePool

from internal.fakegke import tpu_node_pool
from internal.fakegke.client import rest_client

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def cli() -> Iterator[subprocess.Popen[str]]:
    # Started as a background job of a non-interactive shell (CI's, nohup's) is: with
    # SIGINT ignored. Ctrl-C must stop the emulator all the same.
    command = f"trap '' INT; exec {shlex.quote(sys.executable)} -m internal.fakegke --port 0"
    process = subprocess.Popen(
        ["sh", "-c", command],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.wait(timeout=5)


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_cli_serves_until_interrupted(cli: subprocess.Popen[str], stop_signal: int) -> None:
    assert cli.stdout is not None
    first_line = cli.stdout.readline()
    match = re.fullmatch(r"fakegke listening on (http://127\.0\.0\.1:\d+)\n", first_line)
    assert match, first_line
    endpoint = match.group(1)
    body = json.dumps(tpu_node_pool("np", status="STOPPING")).encode()
    put = urllib.request.Request(
        f"{endpoint}/admin/v1/projects/p/locations/l/clusters/c/nodePools/np", body, method="PUT"
    )
    urllib.request.urlopen(put, timeout=5).close()

    client = rest_client(endpoint)
    pool = client.get_node_pool(name="projects/p/locations/l/clusters/c/nodePools/np")
    client.transport.close()  # type: ignore[no-untyped-call]
    cli.send_signal(stop_signal)
    out, err = cli.communicate(timeout=10)

    assert pool.status == NodePool.Status.STOPPING
    assert cli.returncode == 0, err
    assert out == "fakegke stopped\n"

"""The emulator behaves like Cloud Storage where megamon's event store depends on it.

Every check goes through the real ``google-cloud-storage`` client, so these tests
also pin down how that client (3.x) must be configured to reach the emulator.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from google.api_core.exceptions import NotFound, PreconditionFailed
from google.cloud import storage

from internal.gcsemu import GcsEmulator, GcsEmulatorError, find_binary, free_port

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_upload_download_round_trip(gcs_client: Any, gcs_bucket: str) -> None:
    payload = bytes(range(256)) * 1000
    blob = gcs_client.bucket(gcs_bucket).blob("events/2024/part-0001.jsonl")
    blob.upload_from_string(payload, content_type="application/x-ndjson")

    fetched = gcs_client.bucket(gcs_bucket).blob("events/2024/part-0001.jsonl")
    assert fetched.download_as_bytes() == payload
    assert gcs_client.bucket(gcs_bucket).get_blob(blob.name).content_type == (
        "application/x-ndjson"
    )


def test_generation_match_zero_creates_only_once(gcs_client: Any, gcs_bucket: str) -> None:
    bucket = gcs_client.bucket(gcs_bucket)
    bucket.blob("lock").upload_from_string(b"first", if_generation_match=0)

    with pytest.raises(PreconditionFailed):
        bucket.blob("lock").upload_from_string(b"second", if_generation_match=0)
    assert bucket.blob("lock").download_as_bytes() == b"first"


def test_generation_match_is_compare_and_swap(gcs_client: Any, gcs_bucket: str) -> None:
    bucket = gcs_client.bucket(gcs_bucket)
    blob = bucket.blob("index.json")
    blob.upload_from_string(b"v1", if_generation_match=0)
    first = blob.generation

    blob.upload_from_string(b"v2", if_generation_match=first)
    second = blob.generation
    assert second > first

    with pytest.raises(PreconditionFailed):
        bucket.blob("index.json").upload_from_string(b"stale", if_generation_match=first)
    assert bucket.blob("index.json").download_as_bytes() == b"v2"


def test_generation_match_on_missing_object_fails(gcs_client: Any, gcs_bucket: str) -> None:
    with pytest.raises(PreconditionFailed):
        gcs_client.bucket(gcs_bucket).blob("absent").upload_from_string(
            b"x", if_generation_match=12345
        )


def test_reload_reports_generation(gcs_client: Any, gcs_bucket: str) -> None:
    written = gcs_client.bucket(gcs_bucket).blob("a")
    written.upload_from_string(b"12345", if_generation_match=0)

    blob = gcs_client.bucket(gcs_bucket).blob("a")
    assert blob.generation is None
    blob.reload()
    assert blob.generation == written.generation
    assert blob.metageneration == 1
    assert blob.size == 5


def test_copy_blob(gcs_client: Any, gcs_bucket: str) -> None:
    bucket = gcs_client.bucket(gcs_bucket)
    source = bucket.blob("src")
    source.upload_from_string(b"payload")

    copy = bucket.copy_blob(source, bucket, "dst")

    assert copy.name == "dst"
    assert copy.generation is not None
    assert bucket.blob("dst").download_as_bytes() == b"payload"


def test_list_blobs_with_prefix(gcs_client: Any, gcs_bucket: str) -> None:
    bucket = gcs_client.bucket(gcs_bucket)
    for name in ("pools/a/1", "pools/a/2", "pools/b/1", "workloads/x"):
        bucket.blob(name).upload_from_string(name.encode())

    names = [b.name for b in gcs_client.list_blobs(gcs_bucket, prefix="pools/a/")]
    assert names == ["pools/a/1", "pools/a/2"]

    listing = gcs_client.list_blobs(gcs_bucket, prefix="pools/", delimiter="/")
    assert list(listing) == []
    assert listing.prefixes == {"pools/a/", "pools/b/"}


def test_public_url_is_served(gcs_client: Any, gcs_bucket: str) -> None:
    blob = gcs_client.bucket(gcs_bucket).blob("dir/page.txt")
    blob.upload_from_string(b"hello")
    # -public-host makes the XML-style /<bucket>/<object> path work on the emulator.
    with urllib.request.urlopen(blob.public_url, timeout=5) as response:
        assert response.read() == b"hello"


def test_missing_object_is_not_found(gcs_client: Any, gcs_bucket: str) -> None:
    with pytest.raises(NotFound):
        gcs_client.bucket(gcs_bucket).blob("nope").download_as_bytes()
    assert not gcs_client.bucket(gcs_bucket).blob("nope").exists()


def test_buckets_are_isolated(gcs_emulator: GcsEmulator, gcs_client: Any, gcs_bucket: str) -> None:
    assert list(gcs_client.list_blobs(gcs_bucket)) == []
    assert gcs_bucket.startswith("t-test-buckets-are-isolated-")
    with pytest.raises(GcsEmulatorError, match="409"):
        gcs_emulator.create_bucket(gcs_bucket)


def test_env_fixture_serves_default_client(gcs_emulator_env: str, gcs_bucket: str) -> None:
    client = storage.Client()
    try:
        assert client.api_endpoint == gcs_emulator_env
        client.bucket(gcs_bucket).blob("k").upload_from_string(b"v")
        assert client.bucket(gcs_bucket).blob("k").download_as_bytes() == b"v"
    finally:
        client.close()


def test_start_stop_and_command_line() -> None:
    with GcsEmulator() as emulator:
        command = emulator.command(emulator.port)
        assert command[0] == str(find_binary())
        flags = dict(zip(command[1::2], command[2::2], strict=True))
        assert flags["-backend"] == "memory"
        assert flags["-scheme"] == "http"
        assert flags["-external-url"] == emulator.endpoint
        assert emulator.endpoint == f"http://127.0.0.1:{emulator.port}"
        health = f"{emulator.endpoint}/_internal/healthcheck"
        with urllib.request.urlopen(health, timeout=5) as response:
            assert response.status == 200
    assert not emulator.running
    with pytest.raises(OSError), urllib.request.urlopen(health, timeout=5):
        pass


def test_start_failure_reports_stderr() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        emulator = GcsEmulator(port=taken.getsockname()[1], start_timeout=10)
        with pytest.raises(GcsEmulatorError, match="address already in use"):
            emulator.start()
    assert not emulator.running


def test_broken_binary_reports_stderr(tmp_path: Path) -> None:
    script = tmp_path / "fake-gcs-server"
    script.write_text("#!/bin/sh\necho 'cannot open backend' >&2\nexit 3\n")
    script.chmod(0o755)
    with pytest.raises(GcsEmulatorError, match=r"code 3(.|\n)*cannot open backend"):
        GcsEmulator(binary=script).start()


def test_module_runs_in_foreground_until_interrupted() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "internal.gcsemu", "--port", str(port), "--bucket", "cli-b"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        assert lines[1].startswith(f"endpoint: http://127.0.0.1:{port}"), lines
        url = f"http://127.0.0.1:{port}/storage/v1/b/cli-b"
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.status == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.terminate()  # lets the CLI stop its fake-gcs-server child
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()

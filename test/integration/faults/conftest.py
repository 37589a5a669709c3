"""The fault suite: the scenario without faults once, then once per fault."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from internal.gcsemu.client import make_storage_client
from internal.gcsemu.fixtures import unique_bucket_name
from test.integration.faults.harness import History, Rig, rig, run_scenario


@pytest.fixture
def fresh_rig(tmp_path: Path, gcs_emulator: Any, gcs_client: Any) -> Iterator[Rig]:
    bucket = unique_bucket_name("faults")
    gcs_emulator.create_bucket(bucket)
    with rig(tmp_path, bucket, gcs_client, gcs_emulator.endpoint) as running:
        yield running


@pytest.fixture(scope="session")
def clean_history(tmp_path_factory: pytest.TempPathFactory, gcs_emulator: Any) -> History:
    """The scenario's history without any fault, the reference for every case."""
    bucket = unique_bucket_name("clean")
    gcs_emulator.create_bucket(bucket)
    workdir = tmp_path_factory.mktemp("clean")
    with rig(
        workdir, bucket, make_storage_client(gcs_emulator.endpoint), gcs_emulator.endpoint
    ) as running:
        return run_scenario(running, [])


Scenario = Callable[..., History]

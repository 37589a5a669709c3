"""The fault suite: the scenario without faults once, then once per fault."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from internal.gcsemu.client import make_storage_client
from internal.gcsemu.fixtures import unique_bucket_name
from test.integration.e2e.harness import check_bucket_history
from test.integration.faults.harness import LAST_COMPARISON, History, Rig, rig, run_scenario


@pytest.fixture
def fresh_rig(tmp_path: Path, gcs_emulator: Any, gcs_client: Any) -> Iterator[Rig]:
    bucket = unique_bucket_name("faults")
    gcs_emulator.create_bucket(bucket)
    with rig(tmp_path, bucket, gcs_client, gcs_emulator.endpoint) as running:
        yield running


@pytest.fixture(scope="session")
def clean_history(tmp_path_factory: pytest.TempPathFactory, gcs_emulator: Any) -> History:
    """The scenario's history without any fault, the reference for every case; its surfaces
    agree (``test.crosssurface``)."""
    bucket = unique_bucket_name("clean")
    gcs_emulator.create_bucket(bucket)
    workdir = tmp_path_factory.mktemp("clean")
    with rig(
        workdir, bucket, make_storage_client(gcs_emulator.endpoint), gcs_emulator.endpoint
    ) as running:
        history = run_scenario(running, [])
        assert check_bucket_history(running.processes, running.storage, workdir)
        return history


Scenario = Callable[..., History]

RELIABILITY_OUT_ENV = "MEGAMON_RELIABILITY_OUT"
_OUTCOMES: list[dict[str, Any]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Collect each case's comparison for docs/reliability.md."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not LAST_COMPARISON:
        return
    doc = (getattr(item, "function", None).__doc__ or "").strip()  # type: ignore[union-attr]
    found = LAST_COMPARISON.pop()
    _OUTCOMES.append(
        {
            "case": item.name,
            "doc": " ".join(doc.split()),
            "passed": report.passed,
            "transitions": found.transitions,
            "lost": found.lost,
            "duplicated": found.duplicated,
            "max_offset_s": round(found.max_offset_s, 2),
        }
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(RELIABILITY_OUT_ENV)
    if path and _OUTCOMES:
        Path(path).write_text("\n".join(json.dumps(o) for o in _OUTCOMES) + "\n")

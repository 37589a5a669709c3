"""Fixtures shared by every test: the emulators from ``internal/``, started on 127.0.0.1."""

from typing import Any

import freezegun
import pytest

from test.crosssurface import PASSED

pytest_plugins = [
    "internal.gcsemu.fixtures",
    "internal.fakegke.fixtures",
]

# freezegun patches every imported module's datetime attributes; the kubernetes client's
# lazily imported models must not be built under a frozen clock.
freezegun.configure(extend_ignore_list=["kubernetes", "google", "grpc", "pydantic"])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Remember whether the test's own call passed, for the checks its fixtures run at the
    end (``test.crosssurface``)."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[PASSED] = report.passed

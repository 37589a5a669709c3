"""Fixtures shared by every test: the emulators from ``internal/``, started on 127.0.0.1."""

import freezegun

pytest_plugins = [
    "internal.gcsemu.fixtures",
    "internal.fakegke.fixtures",
]

# freezegun patches every imported module's datetime attributes; the kubernetes client's
# lazily imported models must not be built under a frozen clock.
freezegun.configure(extend_ignore_list=["kubernetes", "google", "grpc", "pydantic"])

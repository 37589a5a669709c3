"""Fixtures shared by every test: the emulators from ``internal/``, started on 127.0.0.1."""

pytest_plugins = [
    "internal.gcsemu.fixtures",
    "internal.fakegke.fixtures",
]

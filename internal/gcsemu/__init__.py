"""Google Cloud Storage emulator for megamon's tests: the real ``fake-gcs-server`` binary.

See :mod:`internal.gcsemu.emulator` for process management,
:mod:`internal.gcsemu.client` for building clients, and
:mod:`internal.gcsemu.fixtures` for the pytest plugin.
"""

from internal.gcsemu.client import (
    DEFAULT_PROJECT,
    DISABLE_BUCKET_METADATA_ENV,
    fast_retry,
    make_storage_client,
)
from internal.gcsemu.emulator import GcsEmulator, GcsEmulatorError, find_binary, free_port

__all__ = [
    "DEFAULT_PROJECT",
    "DISABLE_BUCKET_METADATA_ENV",
    "GcsEmulator",
    "GcsEmulatorError",
    "fast_retry",
    "find_binary",
    "free_port",
    "make_storage_client",
]

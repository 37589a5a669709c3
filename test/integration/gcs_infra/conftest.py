"""Fixtures for the Cloud Storage test-infrastructure tests.

``pytest_plugins`` is only honoured in the root conftest, so the plugin's fixtures
are imported here explicitly; once the root conftest loads
``internal.gcsemu.fixtures`` these imports become redundant but harmless.
"""

from internal.gcsemu.fixtures import (  # noqa: F401
    gcs_bucket,
    gcs_client,
    gcs_emulator,
    gcs_emulator_env,
    gcs_fast_retry,
    gcs_proxy,
    gcs_proxy_client,
)

"""Fixtures of the fake GKE tests: a fresh ``fake_gke`` and the real ``gke_client`` on it."""

from internal.fakegke.fixtures import fake_gke, gke_client  # noqa: F401

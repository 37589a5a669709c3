"""Observers: pure functions from cluster state (cache snapshots, GKE node pools) to
``{key: Observation}`` per kind. They know nothing of history; problems with single objects
are returned, not raised, so one bad object never stops a cycle."""

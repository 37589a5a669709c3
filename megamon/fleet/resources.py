"""One history read as the summary's resources: every live record (snapshot + log), every
archive entry, and every retirement the log records that ``archive/`` does not hold. The one
reading of ``megamon report`` for one history and of the fleet page for each of its
clusters, so a cluster's figures on the fleet page are its own report's.

Live resources are named by the attributes recorded in the log; a report's labels
(``reports/latest.json``) fill in keys the log has none for (a history the Go megamon wrote).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence

from megamon.domain.kinds import Kind
from megamon.recording.eventlog import UNOBSERVED_SLACK_NS
from megamon.recording.loading import load_kind
from megamon.stores.base import EventStore
from megamon.summary.availability import Resource, unobserved_gaps

Labels = Mapping[Kind, Mapping[str, Mapping[str, object]]]
"""Per kind and key, the attributes of a live resource from ``reports/latest.json``."""


def read_resources(
    store: EventStore,
    kinds: Sequence[Kind],
    labels: Labels,
    now: int,
    *,
    cluster: str = "",
) -> Iterator[Resource]:
    """The resources of ``kinds`` in ``store``, with the gaps in its coverage up to ``now``;
    ``cluster`` names the history on the fleet page (empty for one history's report). The
    log is loaded up to what the clock allows (also for an older ``now``)."""
    loaded_at = max(now, time.time_ns())
    for kind in kinds:
        kind_labels = labels.get(kind, {})
        history = load_kind(store, kind, loaded_at).history
        gaps = unobserved_gaps(history.observed, now, UNOBSERVED_SLACK_NS)
        for key, record in history.records.items():
            attrs = history.attrs.get(key) or kind_labels.get(key, {})
            detail = history.details.get(key, "")
            yield Resource(
                kind, key, record, attrs, unobserved=gaps, detail=detail, cluster=cluster
            )
        archived = set()
        for key in store.archived_keys(kind):
            for entry in store.read_archive(kind, key):
                archived.add((entry.key, entry.retired_at))
                yield Resource(
                    kind, entry.key, entry.record, entry.attrs, entry.retired_at, gaps,
                    cluster=cluster,
                )  # fmt: skip
        for retired in history.retired:  # the log's retirements, when archive/ lacks them
            if (retired.key, retired.retired_at) not in archived:
                yield Resource(
                    kind, retired.key, retired.record, retired.attrs, retired.retired_at, gaps,
                    cluster=cluster,
                )  # fmt: skip

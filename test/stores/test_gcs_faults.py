"""GCS event store under faults: the real client, fake-gcs-server, and the fault proxy between.

Bursts of 503/429 are retried; a stalled call times out and is retried; an upload cut in the
middle leaves no partial object; when the deadline runs out the error says so and nothing is
written; an unchanged file is not downloaded again.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from internal.faultproxy import FaultProxy
from internal.gcsemu.client import fast_retry, make_storage_client
from megamon.codec import history as codec
from megamon.domain.events import EventRecord
from megamon.domain.kinds import Kind
from megamon.domain.observations import Observation
from megamon.errors import StoreError
from megamon.recording.eventlog import EventLog
from megamon.stores.gcs import GcsEventStore
from megamon.telemetry import Instruments

PATH = "megamon/clusters/faults"
OBJECT = f"{PATH}/node-pools.json"
T = 1_780_272_000 * 10**9
RECORD = {"np": EventRecord.trusted((T, T), b"\x00\x01")}
UP = Observation.build(expected=1, ready=1)
DOWN = Observation.build(expected=1, ready=0)


def media_downloads(proxy: FaultProxy) -> int:
    return sum(1 for r in proxy.records if r.method == "GET" and "alt=media" in r.target)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def store(gcs_proxy: FaultProxy, gcs_bucket: str, registry: CollectorRegistry) -> GcsEventStore:
    return GcsEventStore(
        make_storage_client(gcs_proxy.endpoint),
        gcs_bucket,
        PATH,
        instruments=Instruments("megamon", registry),
        retry=fast_retry(),
        timeout=(1.0, 1.0),
        deadline=10.0,
    )


def stored(client: Any, bucket: str) -> bytes | None:
    blob = client.bucket(bucket).get_blob(OBJECT)
    return None if blob is None else bytes(blob.download_as_bytes())


def test_an_unchanged_file_is_not_downloaded_again(
    store: GcsEventStore, gcs_proxy: FaultProxy
) -> None:
    store.write(Kind.NODEPOOL, RECORD, None)
    fresh = GcsEventStore(
        make_storage_client(gcs_proxy.endpoint),
        store._backend._bucket_name,
        PATH,  # type: ignore[attr-defined]
    )
    gcs_proxy.reset()
    for _ in range(3):
        assert fresh.read(Kind.NODEPOOL).records == RECORD
    assert media_downloads(gcs_proxy) == 1
    assert store.read(Kind.NODEPOOL).records == RECORD
    assert media_downloads(gcs_proxy) == 1  # the writer knows what it wrote


def test_a_cycle_with_nothing_new_neither_writes_nor_downloads(
    store: GcsEventStore, gcs_proxy: FaultProxy
) -> None:
    log = EventLog(store, [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"np": UP}}, T)
    gcs_proxy.reset()
    log.append({Kind.NODEPOOL: {"np": UP}}, T + 10)
    assert media_downloads(gcs_proxy) == 0
    assert not any(r.method in ("POST", "PUT") for r in gcs_proxy.records)


@pytest.mark.parametrize("status", [503, 429, 500])
def test_bursts_of_errors_are_retried_until_they_pass(
    store: GcsEventStore,
    gcs_proxy: FaultProxy,
    gcs_client: Any,
    gcs_bucket: str,
    registry: CollectorRegistry,
    status: int,
) -> None:
    gcs_proxy.fail_next(3, status)
    store.write(Kind.NODEPOOL, RECORD, None)
    assert stored(gcs_client, gcs_bucket) == codec.encode_event_file(RECORD)
    gcs_proxy.fail_next(3, status)
    fresh = GcsEventStore(
        make_storage_client(gcs_proxy.endpoint), gcs_bucket, PATH, retry=fast_retry()
    )
    assert fresh.read(Kind.NODEPOOL).records == RECORD
    assert (
        registry.get_sample_value("megamon_gcs_latency_seconds_count", {"operation": "upload"})
        == 1.0
    )


def test_a_stalled_call_times_out_and_is_retried(
    store: GcsEventStore, gcs_proxy: FaultProxy, gcs_client: Any, gcs_bucket: str
) -> None:
    gcs_proxy.stall_next(1, 3.0, method="POST")
    store.write(Kind.NODEPOOL, RECORD, None)
    assert stored(gcs_client, gcs_bucket) == codec.encode_event_file(RECORD)


def test_an_upload_cut_in_the_middle_leaves_no_partial_object(
    store: GcsEventStore, gcs_proxy: FaultProxy, gcs_client: Any, gcs_bucket: str
) -> None:
    version = store.write(Kind.NODEPOOL, RECORD, None)
    bigger = {f"np-{i}": RECORD["np"] for i in range(200)}
    gcs_proxy.reset_next_upload(1)
    store.write(Kind.NODEPOOL, bigger, version)
    assert stored(gcs_client, gcs_bucket) == codec.encode_event_file(bigger)
    assert gcs_proxy.count(method="POST") >= 2


def test_a_retried_upload_that_had_landed_is_not_applied_twice(
    store: GcsEventStore, gcs_proxy: FaultProxy, gcs_client: Any, gcs_bucket: str
) -> None:
    """The response to an upload is lost and the library retries it: the lease's creation
    and a segment's each find their own object already there, and count it as written."""
    log = EventLog(store, [Kind.NODEPOOL])
    gcs_proxy.drop_next_response(1, method="POST")  # the writer lease
    log.append({Kind.NODEPOOL: {"np": DOWN}}, T)
    assert not log.standing_by
    gcs_proxy.drop_next_response(1, method="POST")  # the second segment
    log.append({Kind.NODEPOOL: {"np": UP}}, T + 1)
    log.close()
    records = codec.decode_event_file(stored(gcs_client, gcs_bucket) or b"", "x")
    assert records["np"].timestamps == (T, T + 1)


def test_deadline_exceeded_is_a_clear_error_and_writes_nothing(
    gcs_proxy: FaultProxy, gcs_client: Any, gcs_bucket: str
) -> None:
    store = GcsEventStore(
        make_storage_client(gcs_proxy.endpoint),
        gcs_bucket,
        PATH,
        retry=fast_retry(),
        deadline=1.0,
    )
    gcs_proxy.fail_next(10_000, 503)
    with pytest.raises(StoreError) as caught:
        store.write(Kind.NODEPOOL, RECORD, None)
    message = str(caught.value)
    assert f"gs://{gcs_bucket}/{OBJECT}" in message and "gave up after 1s" in message
    gcs_proxy.clear_rules()
    assert stored(gcs_client, gcs_bucket) is None


def test_an_unreachable_bucket_is_a_store_error(gcs_bucket: str) -> None:
    store = GcsEventStore(
        make_storage_client("http://127.0.0.1:9"),
        gcs_bucket,
        PATH,
        retry=fast_retry(),
        deadline=0.5,
    )
    with pytest.raises(StoreError, match="gave up"):
        store.read(Kind.NODEPOOL)


def test_the_object_deleted_underneath_is_restored_from_what_megamon_saw(
    store: GcsEventStore, gcs_client: Any, gcs_bucket: str
) -> None:
    log = EventLog(store, [Kind.NODEPOOL])
    log.append({Kind.NODEPOOL: {"np": UP}}, T)
    assert log.compact() == [Kind.NODEPOOL]
    gcs_client.bucket(gcs_bucket).blob(OBJECT).delete()
    log.append({Kind.NODEPOOL: {"np": UP, "np2": UP}}, T + 10)
    log.close()
    records = codec.decode_event_file(stored(gcs_client, gcs_bucket) or b"", "x")
    assert set(records) == {"np", "np2"}
    assert records["np"].timestamps == (T, T)

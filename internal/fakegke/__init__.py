"""fakegke: an emulator of the GKE v1 REST node-pool API for megamon's tests and demos.

Why: megamon derives node-pool up/down history from what GKE's API reports. Testing that
against a mock of the client would skip the parts that break in production (URL building,
JSON and enum decoding, HTTP error mapping, retries, timeouts), and testing against real GKE
is slow and costly. This package serves the same REST surface on 127.0.0.1 so the real
``ClusterManagerClient(transport="rest")`` can be pointed at it, and lets tests script node
pool states and failures.

It serves Compute Engine's ResourcePolicies.Get too, for the workload policies that hold the
topology of Ironwood (TPU7x) multi-host pools.

Entry points: ``FakeGke`` (start/stop, seed, fault injection), ``tpu_node_pool`` (realistic
node-pool JSON), ``tpu7x_node_pool`` and ``workload_policy`` (a TPU7x pool and its policy),
``rest_client`` (the real client wired to a fake), the pytest plugin
``internal.fakegke.fixtures``, and ``python -m internal.fakegke`` for a standalone server.
"""

from internal.fakegke.builders import tpu7x_node_pool, tpu_node_pool, workload_policy
from internal.fakegke.errors import ApiError
from internal.fakegke.server import FakeGke

__all__ = ["ApiError", "FakeGke", "tpu7x_node_pool", "tpu_node_pool", "workload_policy"]

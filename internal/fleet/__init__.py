"""fleet: a simulated GKE TPU fleet that drives the fake GKE and Kubernetes APIs together.

Why: megamon is only meaningful against a cluster that changes — pools provisioning node by
node, failing, being interrupted and recovering, workloads running and ending — with GKE and
Kubernetes telling one consistent story. This package is that cluster, for ``make demo`` and
for end-to-end tests:

- ``objects`` / ``nodes``: builders of realistic Kubernetes JSON (TPU nodes, full-size with
  ``realistic=True``; JobSets, Jobs, leader pods, LeaderWorkerSets, Slices);
- ``fleet.Fleet``: operations that change both emulators consistently;
- ``scenario``: timed steps played on a compressed clock; ``demo``: the demo scenario;
- ``python -m internal.fleet``: start both emulators and play the demo until Ctrl-C.
"""

from internal.fleet.demo import demo_scenario
from internal.fleet.fleet import Fleet, FleetError
from internal.fleet.objects import Owner
from internal.fleet.scenario import Outcome, ScenarioRunner, Step, call, describe, minutes
from internal.fleet.shapes import TpuShape

__all__ = [
    "Fleet",
    "FleetError",
    "Outcome",
    "Owner",
    "ScenarioRunner",
    "Step",
    "TpuShape",
    "call",
    "demo_scenario",
    "describe",
    "minutes",
]

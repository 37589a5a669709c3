"""The emulators of the scale benchmark, in a process of their own.

``python -m internal.bench.fleet_server --size S --dir D`` builds the benchmark fleet
(``fleet_objects``) into a Kubernetes API emulator and a GKE emulator, writes a kubeconfig to
``D/kubeconfig``, prints one JSON line (endpoints, object counts, its own RSS) once it serves,
and serves until its standard input closes or it gets SIGTERM.

Why a separate process: 65,000 stored nodes weigh ~1.4 GB in the emulator, and the figures
measured are megamon's own peak RSS and CPU time, which must not include the emulator's.
"""

from __future__ import annotations

import argparse
import gc
import json
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

from internal.bench import fleet_objects
from internal.bench.memory import peak_rss_mb
from internal.fakegke import FakeGke
from internal.fakekube import FakeKube


def serve(size: fleet_objects.Size, directory: Path) -> None:
    started = time.perf_counter()
    kube = FakeKube(history_size=100_000)
    gke = FakeGke()
    nodes = kube.create_many(fleet_objects.nodes(size), copy=False)
    workloads = kube.create_many(fleet_objects.workloads(size), copy=False)
    pools = 0
    for pool in fleet_objects.gke_pools(size):
        gke.put_node_pool(
            fleet_objects.PROJECT, fleet_objects.LOCATION, fleet_objects.CLUSTER, pool
        )
        pools += 1
    for policy in fleet_objects.resource_policies(size):
        gke.put_resource_policy(fleet_objects.PROJECT, fleet_objects.REGION, policy)
    gc.collect()
    gc.freeze()  # millions of stored, acyclic objects: keep the collector off them
    kube.start()
    gke.start()
    kubeconfig = kube.write_kubeconfig(directory / "kubeconfig")
    print(
        json.dumps(
            {
                "kubeconfig": str(kubeconfig),
                "kube": kube.endpoint,
                "gke": gke.endpoint,
                "nodes": nodes,
                "workload_objects": workloads,
                "pools": pools,
                "load_seconds": round(time.perf_counter() - started, 1),
                "rss_mb": round(peak_rss_mb()),
            }
        ),
        flush=True,
    )
    done = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    done.wait()
    gke.stop()
    kube.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m internal.bench.fleet_server")
    parser.add_argument("--size", choices=sorted(fleet_objects.SIZES), required=True)
    parser.add_argument("--dir", type=Path, required=True, help="where to write the kubeconfig")
    args = parser.parse_args(argv)
    serve(fleet_objects.SIZES[args.size], args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())

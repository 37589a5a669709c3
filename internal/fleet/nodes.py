"""GKE TPU node objects in Kubernetes JSON, plain or full-sized.

Why: megamon reads a handful of labels and one condition from each node, but it must find them
among everything else a real GKE node carries, and a 65,000-node cluster is only a fair load
test when every node weighs what a real one does (~9 KB of JSON). ``tpu_node`` builds the
fields megamon reads exactly as GKE writes them; ``realistic=True`` adds the rest of a real
node (GKE's system labels and annotations, node-problem-detector conditions, the image list),
so a benchmark pays for parsing, storing and watching it.

Everything that varies per node (IPs, instance id, boot id) is derived from the node name, so
the same call always builds the same object.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from internal.fleet.shapes import TpuShape
from megamon.domain import labels

Obj = dict[str, Any]

GKE_VERSION = "v1.31.5-gke.1169000"
TPU_RESOURCE = "google.com/tpu"
_NAME_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"

# vCPUs and GiB of memory of the TPU VMs the demo uses; other machine types are estimated.
_MACHINES: dict[str, tuple[int, int]] = {
    "ct5lp-hightpu-1t": (24, 48),
    "ct5lp-hightpu-4t": (112, 192),
    "ct5lp-hightpu-8t": (224, 400),
    "ct5p-hightpu-4t": (208, 448),
    "ct6e-standard-1t": (44, 176),
    "ct6e-standard-4t": (180, 720),
    "ct6e-standard-8t": (180, 1440),
    "tpu7x-standard-4t": (224, 960),
}

_READY_REASONS = {
    "True": ("KubeletReady", "kubelet is posting ready status"),
    "False": ("KubeletNotReady", "container runtime status check may not have completed yet"),
    "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status."),
}

# (type, reason, message) of the conditions that are False on a healthy node.
_KUBELET_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
_PROBLEM_DETECTOR_CONDITIONS = (
    ("FrequentUnregisterNetDevice", "NoFrequentUnregisterNetDevice", "node is functioning fine"),
    ("FrequentKubeletRestart", "NoFrequentKubeletRestart", "kubelet is functioning properly"),
    ("FrequentDockerRestart", "NoFrequentDockerRestart", "docker is functioning properly"),
    ("FrequentContainerdRestart", "NoFrequentContainerdRestart", "containerd is functioning fine"),
    ("KernelDeadlock", "KernelHasNoDeadlock", "kernel has no deadlock"),
    ("ReadonlyFilesystem", "FilesystemIsNotReadOnly", "Filesystem is not read-only"),
    ("CorruptDockerOverlay2", "NoCorruptDockerOverlay2", "docker overlay2 is functioning properly"),
)

# (repository, tag, size in bytes) of images a TPU training node has pulled.
_WORKLOAD_IMAGE = ("us-docker.pkg.dev/megamon-demo/training/maxtext-jax", "2025-05-01", 9012345678)
_SYSTEM_IMAGES = (
    ("gke.gcr.io/kube-proxy-amd64", GKE_VERSION, 101234567),
    ("registry.k8s.io/pause", "3.10", 320368),
)
_REALISTIC_IMAGES = (
    ("gke.gcr.io/tpu-device-plugin", "v0.0.14-gke.11", 45123456),
    ("gke.gcr.io/gke-metrics-agent", "1.15.3-gke.0", 87654321),
    ("gke.gcr.io/fluent-bit", "v1.8.12-gke.41", 45234567),
    ("gke.gcr.io/fluent-bit-gke-exporter", "v0.28.0-gke.14", 39123456),
    ("gke.gcr.io/netd", "v0.5.3-gke.1", 32123456),
    ("gke.gcr.io/gcp-compute-persistent-disk-csi-driver", "v1.15.4-gke.2", 25123456),
    ("gke.gcr.io/csi-node-driver-registrar", "v2.12.0-gke.1", 11234567),
    ("gke.gcr.io/node-problem-detector", "v0.8.20-gke.2", 52345678),
    ("gke.gcr.io/prometheus-to-sd", "v0.11.12-gke.11", 23456789),
    ("gke.gcr.io/ip-masq-agent", "v2.11.0-gke.2", 21345678),
    ("gke.gcr.io/gke-metadata-server", "20250110_2300_RC0", 29876543),
    ("gke.gcr.io/k8s-dns-node-cache", "1.23.1-gke.4", 33456789),
    ("gke.gcr.io/gke-distroless/bash", "gke_distroless_20250107.00_p0", 12345678),
)


def tpu_node(
    name: str,
    *,
    pool: str,
    shape: TpuShape,
    zone: str,
    ready: str = "True",
    ready_since: str,
    project: str = "megamon-demo",
    jobset: tuple[str, str] | None = None,
    tpu_slice: str | None = None,
    realistic: bool = False,
) -> Obj:
    """A node of TPU node pool ``pool``, with its ``Ready`` condition set to ``ready``.

    ``ready_since`` is the RFC 3339 ``lastTransitionTime`` of ``Ready``; ``jobset`` is the
    (namespace, name) the TPU provisioner created the pool for, written as its labels;
    ``tpu_slice`` names the slice the node belongs to (``cloud.google.com/gke-tpu-slice``).
    """
    identity = _Identity(name)
    node_labels = _labels(name, pool, shape, zone, realistic=realistic)
    if jobset is not None:
        node_labels[labels.PROVISIONER_JOBSET_NAMESPACE] = jobset[0]
        node_labels[labels.PROVISIONER_JOBSET_NAME] = jobset[1]
    if tpu_slice:
        node_labels[labels.TPU_SLICE] = tpu_slice
    metadata: Obj = {"name": name, "labels": node_labels}
    if realistic:
        metadata["annotations"] = _annotations(identity, node_labels, zone)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": _spec(name, identity, project, zone),
        "status": _status(name, identity, shape, ready, ready_since, realistic=realistic),
    }


def gke_node_name(cluster: str, pool: str, index: int) -> str:
    """GKE's name for node ``index`` of a pool: ``gke-<cluster>-<pool>-<8 hex>-<4 chars>``.

    The 8 hex digits stand for the pool's instance group, the last 4 characters for the VM;
    distinct indexes (below 36**4) give distinct names.
    """
    group = hashlib.sha256(f"{cluster}/{pool}".encode()).hexdigest()[:8]
    number = (index * 1_000_003 + 7) % len(_NAME_ALPHABET) ** 4  # a bijection: 1_000_003 is prime
    suffix = ""
    for _ in range(4):
        number, digit = divmod(number, len(_NAME_ALPHABET))
        suffix += _NAME_ALPHABET[digit]
    return f"gke-{cluster[:20]}-{pool[:24]}-{group}-{suffix}"


def ready_condition(status: str, since: str, heartbeat: str | None = None) -> Obj:
    """The node ``Ready`` condition as kubelet (or the node controller, for Unknown) writes it."""
    if status not in _READY_REASONS:
        raise ValueError(f"node Ready status must be True, False or Unknown, got {status!r}")
    reason, message = _READY_REASONS[status]
    return {
        "type": labels.CONDITION_READY,
        "status": status,
        "lastHeartbeatTime": heartbeat or since,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }


def with_ready(conditions: list[Obj], status: str, now: str) -> list[Obj]:
    """``conditions`` with ``Ready`` set to ``status``; its transition time moves only on change.

    Kubelet refreshes the heartbeat of every condition it posts, but the transition time only
    when the status flips; megamon's Unknown grace period depends on that difference.
    """
    updated = [c for c in conditions if c.get("type") != labels.CONDITION_READY]
    previous = next((c for c in conditions if c.get("type") == labels.CONDITION_READY), None)
    unchanged = previous is not None and previous.get("status") == status
    since = str(previous["lastTransitionTime"]) if previous is not None and unchanged else now
    updated.append(ready_condition(status, since, heartbeat=now))
    return updated


class _Identity:
    """Per-node identifiers, derived from the node name so builds are reproducible."""

    def __init__(self, name: str) -> None:
        digest = hashlib.sha256(name.encode()).digest()
        self.instance_id = str(int.from_bytes(digest[:8], "big") % 10**19)
        self.boot_id = str(uuid.UUID(bytes=digest[8:24]))
        self.system_uuid = str(uuid.UUID(bytes=digest[16:32]))
        self.machine_id = digest[:16].hex()
        self.internal_ip = f"10.{digest[0] % 64 + 128}.{digest[1]}.{digest[2] % 254 + 1}"
        self.pod_cidr = f"10.{digest[3] % 64}.{digest[4]}.0/24"


def _labels(name: str, pool: str, shape: TpuShape, zone: str, *, realistic: bool) -> dict[str, str]:
    region = zone.rsplit("-", 1)[0]
    found = {
        labels.NODEPOOL: pool,
        labels.TPU_ACCELERATOR: shape.accelerator,
        labels.TPU_TOPOLOGY: shape.topology,
        labels.ACCELERATOR_COUNT: str(shape.chips_per_vm),
        "cloud.google.com/gke-provisioning": "spot" if shape.spot else "standard",
        "cloud.google.com/machine-family": shape.family,
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": shape.machine_type,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
    }
    if shape.spot:
        found[labels.SPOT] = "true"
    if realistic:
        found.update(_gke_system_labels(shape, region, zone))
    return found


def _gke_system_labels(shape: TpuShape, region: str, zone: str) -> dict[str, str]:
    return {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": shape.machine_type,
        "beta.kubernetes.io/os": "linux",
        "cloud.google.com/gke-boot-disk": "hyperdisk-balanced",
        "cloud.google.com/gke-container-runtime": "containerd",
        "cloud.google.com/gke-cpu-scaling-level": str(_machine(shape)[0]),
        "cloud.google.com/gke-logging-variant": "DEFAULT",
        "cloud.google.com/gke-max-pods-per-node": "110",
        "cloud.google.com/gke-netd-ready": "true",
        "cloud.google.com/gke-os-distribution": "cos",
        "cloud.google.com/gke-stack-type": "IPV4",
        "cloud.google.com/private-node": "true",
        "failure-domain.beta.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "topology.gke.io/zone": zone,
    }


def _annotations(identity: _Identity, node_labels: dict[str, str], zone: str) -> dict[str, str]:
    applied = ",".join(f"{k}={v}" for k, v in sorted(node_labels.items()) if "gke" in k)
    return {
        "alpha.kubernetes.io/provided-node-ip": identity.internal_ip,
        "container.googleapis.com/instance_id": identity.instance_id,
        "csi.volume.kubernetes.io/nodeid": (
            '{"pd.csi.storage.gke.io":"projects/megamon-demo/zones/'
            f'{zone}/instances/{node_labels["kubernetes.io/hostname"]}"}}'
        ),
        "node.alpha.kubernetes.io/ttl": "0",
        "node.gke.io/last-applied-node-labels": applied,
        "node.gke.io/last-applied-node-taints": "google.com/tpu=present:NoSchedule",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }


def _spec(name: str, identity: _Identity, project: str, zone: str) -> Obj:
    return {
        "podCIDR": identity.pod_cidr,
        "podCIDRs": [identity.pod_cidr],
        "providerID": f"gce://{project}/{zone}/{name}",
        "taints": [{"key": TPU_RESOURCE, "value": "present", "effect": "NoSchedule"}],
    }


def _status(
    name: str,
    identity: _Identity,
    shape: TpuShape,
    ready: str,
    ready_since: str,
    *,
    realistic: bool,
) -> Obj:
    capacity, allocatable = _resources(shape)
    status: Obj = {
        "addresses": [
            {"type": "InternalIP", "address": identity.internal_ip},
            {"type": "Hostname", "address": name},
        ],
        "allocatable": allocatable,
        "capacity": capacity,
        "conditions": _conditions(ready, ready_since, realistic=realistic),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "images": _images(realistic=realistic),
        "nodeInfo": _node_info(identity),
    }
    if realistic:
        status["runtimeHandlers"] = [
            {"name": "", "features": {"recursiveReadOnlyMounts": True}},
            {"name": "runc", "features": {"recursiveReadOnlyMounts": True}},
        ]
    return status


def _machine(shape: TpuShape) -> tuple[int, int]:
    return _MACHINES.get(shape.machine_type, (28 * shape.chips_per_vm, 48 * shape.chips_per_vm))


def _resources(shape: TpuShape) -> tuple[dict[str, str], dict[str, str]]:
    vcpus, gib = _machine(shape)
    memory_ki = gib * 1024 * 1024
    common = {"google.com/tpu": str(shape.chips_per_vm), "hugepages-1Gi": "0", "pods": "110"}
    capacity = {
        **common,
        "cpu": str(vcpus),
        "ephemeral-storage": "98831908Ki",
        "hugepages-2Mi": "0",
        "memory": f"{memory_ki}Ki",
    }
    allocatable = {
        **common,
        "cpu": f"{vcpus * 1000 - 70 - 6 * vcpus}m",
        "ephemeral-storage": "47060071478",
        "hugepages-2Mi": "0",
        "memory": f"{memory_ki * 94 // 100}Ki",
    }
    return capacity, allocatable


def _conditions(ready: str, since: str, *, realistic: bool) -> list[Obj]:
    conditions: list[Obj] = []
    if realistic:
        conditions += [
            _false_condition(kind, reason, message, since)
            for kind, reason, message in _PROBLEM_DETECTOR_CONDITIONS
        ]
    conditions.append(
        {
            "type": "NetworkUnavailable",
            "status": "False",
            "lastHeartbeatTime": since,
            "lastTransitionTime": since,
            "reason": "RouteCreated",
            "message": "NodeController create implicit route",
        }
    )
    conditions += [_false_condition(k, r, m, since) for k, r, m in _KUBELET_CONDITIONS]
    conditions.append(ready_condition(ready, since))
    return conditions


def _false_condition(kind: str, reason: str, message: str, since: str) -> Obj:
    return {
        "type": kind,
        "status": "False",
        "lastHeartbeatTime": since,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }


def _images(*, realistic: bool) -> list[Obj]:
    chosen = (_WORKLOAD_IMAGE, *_SYSTEM_IMAGES, *(_REALISTIC_IMAGES if realistic else ()))
    return [_image(repository, tag, size) for repository, tag, size in chosen]


def _image(repository: str, tag: str, size: int) -> Obj:
    digest = hashlib.sha256(f"{repository}:{tag}".encode()).hexdigest()
    return {"names": [f"{repository}@sha256:{digest}", f"{repository}:{tag}"], "sizeBytes": size}


def _node_info(identity: _Identity) -> Obj:
    return {
        "architecture": "amd64",
        "bootID": identity.boot_id,
        "containerRuntimeVersion": "containerd://1.7.24",
        "kernelVersion": "6.6.72+",
        "kubeProxyVersion": GKE_VERSION,
        "kubeletVersion": GKE_VERSION,
        "machineID": identity.machine_id,
        "operatingSystem": "linux",
        "osImage": "Container-Optimized OS from Google",
        "systemUUID": identity.system_uuid,
    }

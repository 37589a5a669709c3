"""Small builders of valid object dicts, for seeding the emulator in tests.

Tests read better as `node("n1", labels=...)` than as nested literals, and one place knows the
apiVersion/kind pairs. The builders return plain dicts ready for `FakeKube.create`, the
official client's `create_*` calls (which accept dicts) or `CustomObjectsApi`.
"""

from __future__ import annotations

from typing import Any

from internal.fakekube.resources import resolve

Obj = dict[str, Any]


def _meta(name: str, namespace: str | None, labels: dict[str, str] | None) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    return meta


def obj(
    kind: str,
    name: str,
    namespace: str | None = None,
    *,
    labels: dict[str, str] | None = None,
    spec: Obj | None = None,
    status: Obj | None = None,
) -> Obj:
    """Any served kind, e.g. `obj("JobSet", "js", "default", spec={...})`."""
    rt = resolve(kind)
    ns = (namespace or "default") if rt.namespaced else None
    out: Obj = {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": _meta(name, ns, labels)}
    if spec is not None:
        out["spec"] = spec
    if status is not None:
        out["status"] = status
    return out


def node(name: str, *, labels: dict[str, str] | None = None, ready: bool = True) -> Obj:
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return obj("Node", name, labels=labels, spec={}, status={"conditions": [condition]})


def pod(
    name: str,
    namespace: str = "default",
    *,
    node_name: str | None = None,
    labels: dict[str, str] | None = None,
    phase: str = "Running",
) -> Obj:
    spec: Obj = {"containers": [{"name": "main", "image": "busybox"}]}
    if node_name:
        spec["nodeName"] = node_name
    return obj("Pod", name, namespace, labels=labels, spec=spec, status={"phase": phase})


def job(name: str, namespace: str = "default", *, labels: dict[str, str] | None = None) -> Obj:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "b"}]}}
    return obj("Job", name, namespace, labels=labels, spec={"template": template})

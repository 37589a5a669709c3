"""Discovery documents (`/version`, `/api`, `/apis`, and per group-version resource lists).

The python client does not need discovery for typed calls, but `kubectl`, the dynamic client
and health checks do, and megamon may log the server version. The documents are derived from
the resource table so they never disagree with what is actually served.
"""

from __future__ import annotations

from typing import Any

from internal.fakekube.resources import BUILTIN, ResourceTable, ResourceType
from internal.fakekube.routing import REVIEWS

Obj = dict[str, Any]

VERSION: Obj = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-fakekube",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.24.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def api_versions() -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group_versions(table: ResourceTable) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    keys = [(rt.group, rt.version) for rt in table] + [(g, v) for g, v, _ in REVIEWS]
    for group, version in keys:
        if group and version not in groups.setdefault(group, []):
            groups[group].append(version)
    return groups


def api_groups(table: ResourceTable = BUILTIN) -> Obj:
    groups = []
    for name, versions in _group_versions(table).items():
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _resource_entries(rt: ResourceType) -> list[Obj]:
    entry = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": _VERBS,
    }
    if not rt.status_subresource:
        return [entry]
    status = {
        "name": f"{rt.plural}/status",
        "singularName": "",
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": ["get", "patch", "update"],
    }
    return [entry, status]


def resource_list(group: str, version: str, table: ResourceTable = BUILTIN) -> Obj | None:
    """The APIResourceList of one group version, or None when it is not served."""
    resources: list[Obj] = []
    for rt in table:
        if (rt.group, rt.version) == (group, version):
            resources.extend(_resource_entries(rt))
    for (g, v, plural), kind in REVIEWS.items():
        if (g, v) == (group, version):
            resources.append(
                {
                    "name": plural,
                    "singularName": "",
                    "namespaced": False,
                    "kind": kind,
                    "verbs": ["create"],
                }
            )
    if not resources:
        return None
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def document(path: str, table: ResourceTable = BUILTIN) -> Obj | None:
    """The discovery document served at `path`, if any."""
    parts = [p for p in path.split("/") if p]
    if parts == ["version"]:
        return VERSION
    if parts == ["api"]:
        return api_versions()
    if parts == ["apis"]:
        return api_groups(table)
    if len(parts) == 2 and parts[0] == "api":
        return resource_list("", parts[1], table)
    if len(parts) == 3 and parts[0] == "apis":
        return resource_list(parts[1], parts[2], table)
    if len(parts) == 2 and parts[0] == "apis":
        groups: list[Obj] = api_groups(table)["groups"]
        return next((g for g in groups if g["name"] == parts[1]), None)
    return None

"""The admin endpoint (`/admin/...`): fault injection and inspection over HTTP.

When the emulator runs as a separate process (`python -m internal.fakekube`), for a demo or a
benchmark driving megamon end to end, tests cannot call Python methods on it. The same controls
are reachable here. The admin paths skip authentication, fault rules and request counters.

    POST   /admin/faults     {"status": 500, "count": 2, "pathPrefix": "/api/v1/nodes",
                              "verb": "list", "retryAfter": 1, "delay": 0.5}
           /admin/faults     {"action": "drop_watches", "abrupt": false}
           /admin/faults     {"action": "compact", "dropWatches": true}
           /admin/faults     {"action": "restart"}        (answers 202, restarts just after)
           /admin/faults     {"action": "clear"}
    DELETE /admin/faults     clear all rules
    GET    /admin/faults     the armed rules
    GET    /admin/requests   request counters by verb and resource
"""

from __future__ import annotations

import threading
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import orjson

from internal.fakekube.faults import Fault

if TYPE_CHECKING:
    from internal.fakekube.fakekube import FakeKube


def _error(code: int, message: str) -> tuple[int, dict[str, Any]]:
    return code, {"error": message}


def handle_admin(kube: FakeKube, method: str, path: str, body: bytes) -> tuple[int, Any]:
    """Serve one admin request; returns (status code, JSON document)."""
    route = path.rstrip("/")
    if route == "/admin/requests" and method == "GET":
        counts = [{"verb": v, "resource": r, "count": n} for (v, r), n in kube.requests.items()]
        return 200, {"requests": counts, "resourceVersion": kube.resource_version}
    if route != "/admin/faults":
        return _error(404, f"no admin endpoint {path}")
    if method == "GET":
        return 200, {"faults": [asdict(f) for f in kube.faults.rules]}
    if method == "DELETE":
        kube.faults.clear()
        return 200, {"cleared": True}
    if method != "POST":
        return _error(405, f"{method} not allowed on {path}")
    try:
        command = orjson.loads(body or b"{}")
    except orjson.JSONDecodeError as exc:
        return _error(400, f"invalid JSON: {exc}")
    if not isinstance(command, dict):
        return _error(400, "expected a JSON object")
    try:
        return _command(kube, command)
    except (TypeError, ValueError) as exc:
        return _error(400, f"invalid command: {exc}")


def _command(kube: FakeKube, command: dict[str, Any]) -> tuple[int, Any]:
    action = command.get("action", "fail")
    if action in ("fail", "delay"):
        if action == "delay":
            command = {"status": None, **command}
        rule = Fault.from_json({k: v for k, v in command.items() if k != "action"})
        fault = kube.faults.add(rule)
        return 200, {"fault": asdict(fault)}
    if action == "drop_watches":
        return 200, {"dropped": kube.drop_watches(abrupt=bool(command.get("abrupt", False)))}
    if action == "compact":
        drop = bool(command.get("dropWatches", command.get("drop_watches", False)))
        return 200, {"floor": kube.compact(drop_watches=drop)}
    if action == "restart":
        threading.Timer(0.05, kube.restart).start()
        return 202, {"restarting": True, "port": kube.port}
    if action == "clear":
        kube.faults.clear()
        return 200, {"cleared": True}
    return _error(400, f"unknown action {action!r}")

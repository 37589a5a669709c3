"""Write a kubeconfig that points the official client at the emulator.

Code under test should load credentials the way it does in production (a kubeconfig file via
`kubernetes.config`), not be handed a hand-built `Configuration`. The file is JSON, which is
valid YAML, so no YAML writer is needed; it is written atomically so a reader never sees half.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

CONTEXT = "fakekube"


def kubeconfig(server: str, token: str, namespace: str = "default") -> dict[str, Any]:
    """A one-context kubeconfig: an http server and a bearer-token user."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CONTEXT, "cluster": {"server": server}}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
    }


def write(path: str | os.PathLike[str], server: str, token: str) -> Path:
    """Write the kubeconfig to `path` (parents created) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(kubeconfig(server, token), option=orjson.OPT_INDENT_2)
    fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target

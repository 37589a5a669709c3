"""Run the fake GKE server in the foreground: ``python -m internal.fakegke --port N``.

Why: demos and manual debugging (curl, a local megamon) need a long-running fake outside
pytest. Seed it over HTTP with ``PUT /admin/v1/projects/{p}/locations/{l}/clusters/{c}/
nodePools/{name}``. Stops on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Sequence
from types import FrameType

from internal.fakegke.server import FakeGke


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line: ``--port`` (0 picks a free one) and ``--host``."""
    parser = argparse.ArgumentParser(
        prog="python -m internal.fakegke",
        description="Serve a fake GKE node-pool REST API until Ctrl-C or SIGTERM.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until interrupted; prints the endpoint on the first line of stdout."""
    args = parse_args(argv)
    done = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        done.set()

    # Both handled explicitly: Python raises KeyboardInterrupt only when SIGINT was not
    # ignored at start, and a background job of a non-interactive shell starts ignoring it.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    with FakeGke(args.host, args.port) as server:
        print(f"fakegke listening on {server.endpoint}", flush=True)
        done.wait()
    print("fakegke stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

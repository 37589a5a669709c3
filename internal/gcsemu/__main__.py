"""Run the Cloud Storage emulator in the foreground: ``python -m internal.gcsemu --port N``.

Handy for poking at the emulator by hand (curl, a REPL with a real client) with the
exact flags the tests use.  Stops on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import time
from types import FrameType

from internal.gcsemu.emulator import GcsEmulator, GcsEmulatorError


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m internal.gcsemu",
        description="Run fake-gcs-server on 127.0.0.1 (in-memory, plain HTTP).",
    )
    parser.add_argument("--port", type=int, default=None, help="TCP port (default: a free one)")
    parser.add_argument(
        "--bucket", action="append", default=[], help="create this bucket (repeatable)"
    )
    parser.add_argument("--log-level", default="info", help="fake-gcs-server log level")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Start the emulator, print its endpoint and wait for Ctrl-C or SIGTERM."""
    args = _parse_args(argv)
    stop_requested: list[int] = []

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop_requested.append(signum)  # no locks in a signal handler (Event.set can deadlock)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)
    emulator = GcsEmulator(args.port, log_level=args.log_level, inherit_output=True)
    try:
        emulator.start()
        for bucket in args.bucket:
            emulator.create_bucket(bucket)
        print(f"fake-gcs-server: {shlex.join(emulator.command(emulator.port))}", flush=True)
        print(f"endpoint: {emulator.endpoint}  (Ctrl-C to stop)", flush=True)
        while not stop_requested:
            if not emulator.running:
                print("error: fake-gcs-server exited", file=sys.stderr)
                return 1
            time.sleep(0.1)
    except GcsEmulatorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

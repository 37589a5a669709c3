"""Run the emulator in the foreground: `python -m internal.fakekube --port N --kubeconfig P`.

For demos and end-to-end benchmarks where megamon runs as its own process: the emulator
serves until Ctrl-C (or SIGTERM), and is steered through its admin endpoint.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from internal.fakekube.fakekube import FakeKube
from internal.fakekube.resources import JOBSET_RELEASE


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m internal.fakekube", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--kubeconfig", help="write a kubeconfig for the emulator here")
    parser.add_argument("--token", default="fakekube-token", help="bearer token to accept")
    parser.add_argument("--no-auth", action="store_true", help="accept requests without token")
    parser.add_argument("--history-size", type=int, default=10_000, help="watch history events")
    parser.add_argument("--bookmark-interval", type=float, default=5.0, help="seconds")
    parser.add_argument(
        "--jobset-release",
        default=JOBSET_RELEASE,
        help="serve this JobSet release's CRD: older releases' status lacks restart fields",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kube = FakeKube(
        port=args.port,
        token=args.token,
        require_auth=not args.no_auth,
        history_size=args.history_size,
        bookmark_interval=args.bookmark_interval,
        jobset_release=args.jobset_release,
    )
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    kube.start()
    print(f"fakekube serving at {kube.endpoint}", flush=True)
    if args.kubeconfig:
        print(f"kubeconfig: {kube.write_kubeconfig(args.kubeconfig)}", flush=True)
    while not stop.wait(0.5):
        pass
    kube.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

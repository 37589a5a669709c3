"""megamon: how long TPU node pools and training workloads take to come up, how often they
are interrupted and how long they take to recover, from an append-only up/down history."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("megamon")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

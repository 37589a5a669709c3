"""``python -m megamon``: the same as the ``megamon`` command."""

from megamon.cli.main import entry

entry()

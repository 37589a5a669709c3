"""The ``megamon`` command line: the one wiring place, and the only code that exits."""

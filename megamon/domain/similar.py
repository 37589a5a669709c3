"""The known name a mistyped key was meant to be: one rule for the configuration's keys and
the kind descriptions' keys, so both suggest alike ("did you mean …?")."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Final

SIMILAR_KEY_CUTOFF: Final = 0.85
"""How alike an unknown key must be to a known one to be taken for its typo."""


def fold(key: str) -> str:
    """A key folded as Go's ``encoding/json`` compares keys (Unicode simple folding)."""
    return key.lower().replace("\u017f", "s")


def similar_key(key: str, known: Iterable[str]) -> str | None:
    """The known key ``key`` is most like (compared folded: ``anyOf`` is ``AnyOf``), or
    ``None`` when none is alike enough to be its typo."""
    names = {fold(name): name for name in known}
    close = difflib.get_close_matches(fold(key), list(names), n=1, cutoff=SIMILAR_KEY_CUTOFF)
    return names[close[0]] if close else None

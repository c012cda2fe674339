"""Reading a result's plain text as a user reads it: a wrapped line is one sentence."""

from __future__ import annotations

import re


def unwrapped(text: str) -> str:
    """``text`` with each wrapped line joined again (its continuation lines are indented under
    the label's text), so a test can look for a whole sentence."""
    return re.sub(r"\n {8,}", " ", text)

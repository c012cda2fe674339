"""Captured library messages as a folded block (HTML ``<details>``) with a plain-text fallback."""

from __future__ import annotations

from mlc_jupyter.display.messages import messages_bundle, summary

GROUPS = {
    "TVM": ["Warning: fast mode", "Warning: fast mode"],
    "Python libraries": ["FutureWarning: x"],
}


def test_the_summary_counts_messages_by_source():
    assert summary(GROUPS) == "2 messages from TVM, 1 warning from Python libraries"
    assert summary({"TVM": [], "Python libraries": ["a"]}) == "1 warning from Python libraries"


def test_the_block_is_folded_unless_the_magic_failed():
    folded, opened = messages_bundle(GROUPS), messages_bundle(GROUPS, opened=True)
    assert (
        "<details" in folded["text/html"]
        and '<details class="mlc-messages" open' not in folded["text/html"]
    )
    assert '<details class="mlc-messages" open' in opened["text/html"]
    # text cannot fold: the summary alone, every message when the magic failed
    assert folded["text/plain"] == (
        "2 messages from TVM, 1 warning from Python libraries (folded in a notebook)"
    )
    assert opened["text/plain"].splitlines()[1] == "  Warning: fast mode  (×2)"

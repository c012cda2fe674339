"""Messages libraries emitted while a magic ran (Python warnings, TVM's C++ log lines), folded.

A learner reads red stderr as a problem; these are shown as one summary line ("3 messages from
TVM") that opens on a click, and open from the start only when the magic failed.
"""

from __future__ import annotations

import html
from collections import Counter

_BOX = (
    "font-family: var(--jp-code-font-family, monospace); font-size: 12px; "
    "color: var(--jp-ui-font-color2, #666); margin: 2px 0"
)


def _counted(messages: list[str]) -> list[str]:
    """Each distinct message once, in order, with ``(×3)`` when it came several times."""
    counts = Counter(messages)
    seen: list[str] = []
    for message in messages:
        if message not in seen:
            seen.append(message)
    return [m + (f"  (×{counts[m]})" if counts[m] > 1 else "") for m in seen]


def summary(groups: dict[str, list[str]]) -> str:
    """``3 messages from TVM, 1 warning from Python libraries``."""
    parts = []
    for source, messages in groups.items():
        if messages:
            noun = "warning" if source == "Python libraries" else "message"
            plural = "s" if len(messages) != 1 else ""
            parts.append(f"{len(messages)} {noun}{plural} from {source}")
    return ", ".join(parts)


def messages_text(groups: dict[str, list[str]]) -> str:
    """The summary line, then each distinct message indented."""
    lines = [summary(groups) + ":"]
    for messages in groups.values():
        for message in _counted(messages):
            lines += ["  " + line for line in message.splitlines()]
    return "\n".join(lines)


def messages_bundle(groups: dict[str, list[str]], opened: bool = False) -> dict[str, str]:
    """A ``<details>`` block (folded unless ``opened``) with the plain text as fallback."""
    body = "\n".join(
        html.escape(message) for messages in groups.values() for message in _counted(messages)
    )
    state = " open" if opened else ""
    # text has no fold: the summary line alone, unless the magic failed (then they may say why)
    plain = messages_text(groups) if opened else summary(groups) + " (folded in a notebook)"
    return {
        "text/html": f'<details class="mlc-messages"{state} style="{_BOX}">'
        f"<summary>{html.escape(summary(groups))}</summary>"
        f'<pre style="margin: 2px 0 0 1em; white-space: pre-wrap; word-break: normal; '
        f'overflow-wrap: normal">{body}</pre></details>',
        "text/plain": plain,
    }

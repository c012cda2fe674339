"""Highlighted code as HTML with inline styles that follow the notebook's theme.

Colours are JupyterLab's own editor CSS variables (so light and dark themes both read well), each
with a mid-tone fallback for Notebook 7, VS Code, nbviewer and other front ends. Styles are inline
because saved notebooks drop ``<style>`` blocks in some viewers.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from pygments.lexers import PythonLexer
from pygments.token import Comment, Keyword, Name, Number, Operator, String, Token, _TokenType

_COLOURS: tuple[tuple[_TokenType, str, str], ...] = (
    (Comment, "--jp-mirror-editor-comment-color", "#408080"),
    (String, "--jp-mirror-editor-string-color", "#BA2121"),
    (Number, "--jp-mirror-editor-number-color", "#2E8B57"),
    (Keyword, "--jp-mirror-editor-keyword-color", "#8B3FD9"),
    (Name.Decorator, "--jp-mirror-editor-meta-color", "#AA22FF"),
    (Name.Function, "--jp-mirror-editor-def-color", "#2A6FDB"),
    (Name.Class, "--jp-mirror-editor-def-color", "#2A6FDB"),
    (Name.Builtin, "--jp-mirror-editor-builtin-color", "#1F8A70"),
    (Operator, "--jp-mirror-editor-operator-color", "#A0522D"),
)
_TVM_NAMESPACES = {"T", "R", "I", "sch", "tvm"}
_TVM_COLOUR = "var(--jp-mirror-editor-variable-2-color, #1C7CB5)"
MARK_BACKGROUND = "var(--jp-warn-color3, rgba(255, 193, 7, 0.28))"
PRE_STYLE = (
    "font-family: var(--jp-code-font-family, monospace); "
    "font-size: var(--jp-code-font-size, 13px); line-height: 1.4; margin: 0; padding: 4px 0; "
    "background: transparent; color: inherit; overflow-x: auto; "
    # JupyterLab's outputs wrap a <pre> anywhere (pre-wrap, break-all): code never breaks
    # inside a token, a long line scrolls
    "white-space: pre; word-break: normal; overflow-wrap: normal;"
)
#: A plain ``<pre>`` of text in an output: whole lines that scroll rather than wrap mid-word.
PLAIN_PRE = "margin: 0; white-space: pre; word-break: normal; overflow-x: auto"


def _colour(token: _TokenType) -> str | None:
    for kind, variable, fallback in _COLOURS:
        if token in kind:
            return f"var({variable}, {fallback})"
    return None


def _line_spans(code: str) -> list[str]:
    """Highlighted HTML for each line of ``code``."""
    lines: list[str] = [""]
    previous, owner = "", ""
    for token, text in PythonLexer(stripnl=False, ensurenl=False).get_tokens(code):
        colour = _colour(token)
        tvm_name = text in _TVM_NAMESPACES or (previous == "." and owner in _TVM_NAMESPACES)
        if colour is None and token in Token.Name and tvm_name:
            colour = _TVM_COLOUR
        for index, part in enumerate(text.split("\n")):
            if index:
                lines.append("")
            if part:
                escaped = html.escape(part)
                lines[-1] += (
                    f'<span style="color: {colour}">{escaped}</span>' if colour else escaped
                )
        if text.strip():
            owner, previous = previous, text
    return lines


def highlight_html(
    code: str,
    marked_lines: Iterable[int] = frozenset(),
    *,
    line_numbers: bool = False,
) -> str:
    """A ``<pre>`` of highlighted Python/TVMScript; ``marked_lines`` (1-based) get a background."""
    marked = set(marked_lines)
    rows = []
    for number, line in enumerate(_line_spans(code.rstrip("\n")), start=1):
        style = "display: block; min-height: 1.4em;"
        if number in marked:
            style += f" background: {MARK_BACKGROUND};"
        gutter = (
            f'<span style="display: inline-block; width: 3.5em; opacity: 0.5; '
            f'user-select: none">{number}</span>'
            if line_numbers
            else ""
        )
        rows.append(f'<span style="{style}" data-line="{number}">{gutter}{line}</span>')
    return f'<pre class="mlc-code" style="{PRE_STYLE}">{"".join(rows)}</pre>'


def code_bundle(code: str, title: str = "") -> dict[str, str]:
    """A mimebundle for ``code``: highlighted HTML and the plain text."""
    header = (
        f'<div style="font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px; '
        f'opacity: 0.7; margin-bottom: 2px">{html.escape(title)}</div>'
        if title
        else ""
    )
    return {"text/html": header + highlight_html(code), "text/plain": code}

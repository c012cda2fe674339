"""TVMScript highlighted as HTML with inline styles, line anchors and marked lines."""

from __future__ import annotations

import re

from mlc_jupyter.display.highlight import code_bundle, highlight_html

CODE = "for i in range(8):\n    B[i] = A[i] + T.float32(1)  # add <one>\n"


def test_every_line_gets_an_anchor_and_marked_lines_a_background():
    html = highlight_html(CODE, marked_lines={2})
    tags = {m.group(2): m.group(1) for m in re.finditer(r'<span ([^>]*)data-line="(\d+)"', html)}
    assert set(tags) == {"1", "2"}
    assert "background" in tags["2"] and "background" not in tags["1"]


def test_code_is_escaped_and_styled_inline_for_saved_notebooks():
    html = highlight_html(CODE)
    assert "&lt;one&gt;" in html and "<one>" not in html
    assert "style=" in html and "class=" not in html.replace('class="mlc', "")


def test_the_bundle_keeps_the_plain_code_as_text():
    bundle = code_bundle(CODE, title="B")
    assert bundle["text/plain"].rstrip().endswith(CODE.rstrip()) and "B" in bundle["text/html"]

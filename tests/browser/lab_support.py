"""Helpers of the browser tests (the fixtures are in this folder's conftest.py).

Test modules import these from ``lab_support``, never from ``conftest``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "test-output"


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab: ``url`` (no trailing slash), ``token`` and the served ``root`` dir."""

    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        """URL that opens notebook ``name`` (relative to ``root``) in the Lab UI."""
        # a workspace of its own (reset), so tabs opened by earlier tests are not restored
        workspace = Path(name).stem.replace(" ", "-") or "test"
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"


def write_notebook(server: LabServer, cells: list[str], name: str = "test.ipynb") -> Path:
    """Write a notebook of code ``cells`` (python3 kernel) into the server's root dir."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    path = server.root / name
    nbformat.write(nb, path)
    return path


def open_notebook(
    page, cells: list[str], name: str = "test.ipynb", server: LabServer | None = None
):
    """Write ``cells`` as notebook ``name``, open it in ``page`` and wait for an idle kernel."""
    server = server or page.lab_server
    write_notebook(server, cells, name)
    page.goto(server.notebook_url(name))
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    wait_kernel_idle(page)
    return page


def wait_kernel_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until the notebook's kernel status (status bar) reads Idle."""
    from playwright.sync_api import expect

    expect(page.get_by_text("| Idle").first).to_be_visible(timeout=timeout_ms)


def run_all_cells(page, timeout_ms: int = 180_000) -> None:
    """Run every cell (Run > Run All Cells) and wait until no cell is queued or running."""
    from playwright.sync_api import expect

    page.locator(".jp-Notebook").first.click()  # focus the notebook the menu command acts on
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()
    # an unrun cell's prompt is "[ ]:", a queued or running one "[*]:"; wait until none is left
    prompts = page.locator(".jp-CodeCell .jp-InputPrompt")
    expect(prompts.filter(has_text="[ ]")).to_have_count(0, timeout=timeout_ms)
    expect(prompts.filter(has_text="[*]")).to_have_count(0, timeout=timeout_ms)
    wait_kernel_idle(page, timeout_ms)


def screenshot(page_or_locator, name: str) -> Path:
    """Save a PNG ``test-output/<name>.png`` of a page or a locator; return its path."""
    OUTPUT.mkdir(exist_ok=True)
    path = OUTPUT / f"{name}.png"
    page_or_locator.screenshot(path=str(path))
    return path


class Lab:
    """The helpers of this module bound to one page (what the ``lab`` fixture gives)."""

    def __init__(self, page, server: LabServer) -> None:
        self.page, self.server = page, server

    def open(self, cells: list[str], name: str = "test.ipynb"):
        """Write and open a notebook of ``cells``; return the page."""
        return open_notebook(self.page, cells, name, self.server)

    def run_all(self, timeout_ms: int = 180_000) -> None:
        """Run all cells and wait until the kernel is idle."""
        run_all_cells(self.page, timeout_ms)

    def screenshot(self, name: str, locator=None) -> Path:
        """Save ``test-output/<name>.png`` of the page (or of ``locator``)."""
        return screenshot(locator if locator is not None else self.page, name)


#: Breaks of wrapped text inside a token (a name, a path, a word): every text node under
#: ``root`` outside SVG is measured, line by line; a break between two word characters
#: (letters, digits, ``_``, ``'``) is a mid-token wrap. Returns each with its context.
SPLIT_TOKENS_JS = r"""(root) => {
  const word = /[A-Za-z0-9_']/;
  const found = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest('svg, script, style, .cm-editor, textarea')) continue;
    if (!parent.getClientRects().length) continue;  // hidden (a closed <details>, say)
    const text = node.textContent;
    let start = 0;
    for (const segment of text.split('\n')) {
      const end = start + segment.length;
      if (segment.trim().length > 1) {
        range.setStart(node, start); range.setEnd(node, end);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (lines.size > 1) {
          let top = null;
          for (let i = start; i < end; i++) {
            if (text[i] === ' ') continue;
            range.setStart(node, i); range.setEnd(node, i + 1);
            const r = range.getBoundingClientRect();
            if (!r.width) continue;
            if (top !== null && r.top > top + 2 && word.test(text[i]) && word.test(text[i - 1])) {
              found.push(text.slice(Math.max(0, i - 20), i) + ' / ' + text.slice(i, i + 20));
            }
            top = r.top;
          }
        }
      }
      start = end + 1;
    }
  }
  return found;
}"""

#: Every roofline label against its dot and the other labels: returns what is wrong.
ROOFLINE_LABELS_JS = r"""(root) => {
  const wrong = [];
  for (const svg of root.querySelectorAll('svg[aria-label="roofline chart"]')) {
    if (!svg.getClientRects().length) continue;
    const boxes = [];
    const dots = svg.querySelectorAll('[data-dot]');
    for (const dot of dots) {
      const i = dot.dataset.dot;
      const label = svg.querySelector(`[data-label-for="${i}"]`);
      const legend = svg.querySelector(`[data-legend-for="${i}"]`);
      const name = (dot.querySelector('title') || {}).textContent || i;
      if (!label) {
        if (!legend && !name.startsWith('row ')) wrong.push(`${name}: no label`);
        continue;
      }
      const d = dot.getBoundingClientRect(), b = label.getBoundingClientRect();
      const cx = d.left + d.width / 2, cy = d.top + d.height / 2;
      const dx = Math.max(b.left - cx, 0, cx - b.right), dy = Math.max(b.top - cy, 0, cy - b.bottom);
      if (Math.hypot(dx, dy) > 60) wrong.push(`${label.textContent}: ${Math.round(Math.hypot(dx, dy))} px from its dot`);
      for (const [other, o] of boxes) {
        const w = Math.min(b.right, o.right) - Math.max(b.left, o.left);
        const h = Math.min(b.bottom, o.bottom) - Math.max(b.top, o.top);
        if (w > 1 && h > 1) wrong.push(`${label.textContent} covers ${other}`);
      }
      boxes.push([label.textContent, b]);
    }
  }
  return wrong;
}"""

#: Tuning curves' texts that read zero (``0.0 us``): a tick or a label in a unit too large.
#: The text of the lines of a tuning result that run past the output's width (a labelled line
#: wraps under its label; only the per-kernel table, in its own ``pre``, may scroll).
OVERFLOWING_LINES_JS = r"""(root) => [...root.querySelectorAll('div[style*="text-indent"]')]
  .filter(d => d.scrollWidth > d.clientWidth + 1).map(d => d.textContent)"""

ZERO_TICKS_JS = r"""(root) => [...root.querySelectorAll('svg.mlc-tune-curve text')]
  .map(t => t.textContent).filter(t => /(^|[^\d.])0\.0+(\s|$)/.test(t))"""

"""The mlc-jupyter lab extension in a real JupyterLab driven by Debian's Chromium.

Needs the built extension where JupyterLab finds it (``labextension/build.sh --link`` or an
install of the wheel). Leaves ``test-output/labextension_highlight.png`` (a ``%%tir`` cell with
its magic line, ``T.*`` names and block name styled) and ``test-output/labextension_marker.png``
(a failing ``%%tir`` cell with the kernel's message on its line 7).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.browser

GOOD = """%%tir
@T.prim_func
def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)  # T.grid in a comment stays plain"""

BROKEN = """%%tir
@T.prim_func
def add_m(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(M)"""

CELLS = ["%load_ext mlc_jupyter", GOOD, BROKEN, "M = 2.0"]


@pytest.fixture(scope="module", autouse=True)
def _extension_installed() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True,
        text=True,
        check=False,
    )
    if "mlc-jupyter" not in listing.stdout + listing.stderr:
        pytest.skip("the lab extension is not built/installed (run labextension/build.sh --link)")


def _open(page, cells: list[str], name: str):
    """Open notebook ``name`` in a workspace of its own (no notebooks restored from other tests).

    Returns the page and the locator of that notebook's cells.
    """
    from lab_support import wait_kernel_idle, write_notebook

    server = page.lab_server
    write_notebook(server, cells, name)
    workspace = name.replace(".", "-")
    page.goto(f"{server.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={server.token}")
    notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    notebook.wait_for(timeout=60_000)
    wait_kernel_idle(page)
    return page, notebook.locator(".jp-Cell")


def _run_cell(page, cell) -> None:
    from playwright.sync_api import expect

    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.inner_text()
    prompt.click()
    page.keyboard.press("Shift+Enter")
    expect(prompt).not_to_have_text(before, timeout=60_000)  # queued or running
    expect(prompt).to_have_text(re.compile(r"\[\d+\]:"), timeout=60_000)  # and done


def test_tir_cells_are_highlighted_and_a_failing_line_is_marked_until_it_runs_clean(lab_page):
    from lab_support import run_all_cells, screenshot
    from playwright.sync_api import expect

    page, cells = _open(lab_page, CELLS, "labextension.ipynb")
    good, broken = cells.nth(1), cells.nth(2)

    # Highlighting is there on open, in cells that were never active.
    expect(good.locator(".cm-mlc-magic")).to_have_text("%%tir")
    expect(good.locator(".cm-mlc-magic-line")).to_have_count(1)
    names = good.locator(".cm-mlc-tvm-name").all_inner_texts()
    assert names[:3] == ["T.prim_func", "T.Buffer", "T.Buffer"]
    assert "T.grid" not in names  # comments are left alone
    expect(good.locator(".cm-mlc-block-name")).to_have_text('"B"')
    expect(broken.locator(".cm-mlc-block-name")).to_have_text('"B"')
    plain = good.locator(".cm-line").nth(3).evaluate("e => getComputedStyle(e).color")
    styled = good.locator(".cm-mlc-tvm-name").first.evaluate("e => getComputedStyle(e).color")
    assert styled != plain
    expect(cells.nth(0).locator(".cm-mlc-magic")).to_have_count(0)  # a line magic cell
    screenshot(good, "labextension_highlight")

    # Run All stops at the broken cell: its line 7 (magic line = 1) gets the marker.
    run_all_cells(page)
    marked = broken.locator(".cm-mlc-diagnostic-line")
    expect(marked).to_have_count(1, timeout=30_000)
    expect(marked).to_have_attribute("data-mlc-line", "7")
    expect(marked).to_contain_text("B[vi] = A[vi] + T.float32(M)")
    expect(broken.locator(".cm-line").nth(6)).to_have_class("cm-line cm-mlc-diagnostic-line")
    expect(broken.locator(".cm-mlc-diagnostic-message")).to_contain_text(
        "TVMScriptError: Undefined variable: M"
    )
    expect(broken.locator(".cm-mlc-diagnostic-marker")).to_have_count(1)
    expect(good.locator(".cm-mlc-diagnostic-line")).to_have_count(0)
    screenshot(broken, "labextension_marker")

    # Define M, run the broken cell again: it runs clean and the marker goes away.
    _run_cell(page, cells.nth(3))
    _run_cell(page, broken)
    expect(broken.locator(".cm-mlc-diagnostic-line")).to_have_count(0, timeout=30_000)
    expect(broken.locator(".cm-mlc-diagnostic-message")).to_have_count(0)

    # Python indentation works in the magic cell: Enter after `for ...:` indents one level more.
    broken.locator(".cm-line").nth(3).click()
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.keyboard.type("x")
    expect(broken.locator(".cm-line").nth(4)).to_have_text("        x")


MODULE = """%%tir
@I.ir_module
class MyModule:
    @T.prim_func
    def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi] + T.float32(1)"""

EXPORT = 'sch = tvm.s_tir.Schedule(MyModule)\nb = sch.get_sblock("B")\ni, = sch.get_loops(b)'


def test_the_schedule_commands_insert_the_export_and_open_a_stepper_below_the_cell(lab_page):
    from lab_support import run_all_cells
    from playwright.sync_api import expect

    setup = f"import mlc_jupyter.schedule as s\ns.set_last_export({EXPORT!r})"
    page, cells = _open(lab_page, ["%load_ext mlc_jupyter", MODULE, setup], "commands.ipynb")
    run_all_cells(page)
    module = cells.nth(1)

    # Context menu of the %%tir cell: insert the stepper's export as a new cell below.
    module.locator(".jp-InputPrompt").click()
    module.locator(".cm-content").click(button="right")
    menu = page.locator(".lm-Menu")
    expect(menu.get_by_text("Open schedule stepper for this module")).to_be_visible()
    menu.get_by_text("Insert exported schedule steps below").click()
    expect(cells).to_have_count(4)
    expect(cells.nth(2).locator(".cm-content")).to_contain_text('b = sch.get_sblock("B")')
    assert cells.nth(2).locator(".cm-line").count() == 3

    # Command palette, with the %%tir cell active: a %mlc_schedule cell below it, run.
    module.locator(".jp-InputPrompt").click()
    page.keyboard.press("Control+Shift+C")
    page.keyboard.type("Open schedule stepper")
    page.keyboard.press("Enter")
    expect(cells).to_have_count(5)
    stepper = cells.nth(2)
    expect(stepper.locator(".cm-content")).to_have_text("%mlc_schedule MyModule")
    expect(stepper.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"), timeout=60_000)
    expect(stepper.locator(".jp-OutputArea-output").first).to_be_visible()


def _put_settings(server, raw: str) -> None:
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - the test's own server on loopback
        f"{server.url}/lab/api/settings/mlc-jupyter:plugin",
        data=json.dumps({"raw": raw}).encode(),
        method="PUT",
        headers={"Authorization": f"token {server.token}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).close()  # noqa: S310 (loopback)


def test_turning_highlighting_off_in_the_settings_leaves_tir_cells_plain(lab_page, lab_server):
    from playwright.sync_api import expect

    # Positive control: with the default settings the same cell is highlighted.
    page, cells = _open(lab_page, ["%load_ext mlc_jupyter", GOOD], "styled.ipynb")
    expect(page.locator("body")).to_have_attribute("data-mlc-highlighting", "true")
    expect(cells.nth(1).locator(".cm-mlc-tvm-name").first).to_be_visible()
    _put_settings(lab_server, '{"highlighting": false}')
    try:
        page, cells = _open(lab_page, ["%load_ext mlc_jupyter", GOOD], "plain.ipynb")
        cell = cells.nth(1)
        expect(cell.locator(".cm-content")).to_contain_text('with T.block("B")')
        # settings load asynchronously: wait until the extension says they are in force
        expect(page.locator("body")).to_have_attribute("data-mlc-highlighting", "false")
        expect(cell.locator(".cm-mlc-tvm-name")).to_have_count(0)
        expect(cell.locator(".cm-mlc-magic")).to_have_count(0)
    finally:
        _put_settings(lab_server, "{}")

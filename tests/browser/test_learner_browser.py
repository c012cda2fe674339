"""What a learner sees after Run All on notebooks 00 and 05, at 1400 and 900 px, in a real
JupyterLab (Debian's Chromium): the numbers agree or say what they measured, labels sit by
their own dots, curves read, no text wraps inside a name, a path or a word, and a warning
appears only when a conclusion of the table is in doubt.

Each notebook runs once per session in a real kernel (the run the notebook tests read, so chapter
5 runs once) and opens in a module-scoped page on the session's lab server; every test then reads
the same outputs. Screenshots of the roofline, curve and tune outputs go to ``test-output/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from lab_support import (
    OVERFLOWING_LINES_JS,
    ROOFLINE_LABELS_JS,
    SPLIT_TOKENS_JS,
    ZERO_TICKS_JS,
    screenshot,
    wait_kernel_idle,
)
from text_support import unwrapped

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (1400, 900)


def _open_executed(browser, server, nb, name: str):
    """A page with the executed notebook ``nb`` open (signed as the user's own, so JupyterLab
    renders its HTML and SVG outputs as it rendered them live); the page stays open."""
    import nbformat
    from nbformat.sign import NotebookNotary

    NotebookNotary().sign(nb)  # the server's notary: the same user's secret
    (server.root / name).write_text(nbformat.writes(nb))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server.notebook_url(name))
    page.wait_for_selector(".jp-Notebook .jp-OutputArea-output", timeout=60_000)
    wait_kernel_idle(page)
    return page


@pytest.fixture(scope="module")
def notebooks(browser, lab_server, executed_notebook) -> Iterator[dict]:
    """Notebooks 00 and 05 as Run All leaves them (the session's run, which the notebook tests
    read too), each open in its own page."""
    pages = {
        "00": _open_executed(
            browser, lab_server, executed_notebook("00_quickstart.ipynb"), "00_quickstart.ipynb"
        ),
        "05": _open_executed(
            browser,
            lab_server,
            executed_notebook("05_frameworks.ipynb", timeout=1200),
            "05_frameworks.ipynb",
        ),
    }
    yield pages
    for page in pages.values():
        page.close()


def _outputs(page):
    return page.locator(".jp-CodeCell .jp-OutputArea")


def _cell_output(page, source_start: str):
    cell = page.locator(".jp-CodeCell").filter(
        has=page.locator(".jp-InputArea-editor", has_text=source_start)
    )
    return cell.first.locator(".jp-OutputArea").first


def _at_width(page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 1000})
    page.wait_for_timeout(600)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["00", "05"])
def test_the_notebooks_run_whole_without_an_error(notebooks, name, width):
    page = notebooks[name]
    _at_width(page, width)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    traces = [t for t in errors.all_text_contents() if "Traceback" in t or "Error" in t]
    # notebook 05's last cell shows an operator TVM cannot translate, on purpose
    assert len(traces) <= (1 if name == "05" else 0), traces


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["00", "05"])
def test_no_text_wraps_inside_a_name_a_path_or_a_word(notebooks, name, width):
    page = notebooks[name]
    _at_width(page, width)
    split = []
    for output in _outputs(page).all():
        split += output.evaluate(SPLIT_TOKENS_JS)
    assert split == [], f"text wrapped inside a token at {width} px: {split[:5]}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["00", "05"])
def test_every_roofline_label_is_by_its_own_dot_and_covers_no_other(notebooks, name, width):
    page = notebooks[name]
    _at_width(page, width)
    charts = page.locator('svg[aria-label="roofline chart"]')
    assert charts.count() >= 1
    wrong = []
    for output in _outputs(page).all():
        wrong += output.evaluate(ROOFLINE_LABELS_JS)
    assert wrong == [], wrong
    if name == "05":
        race = _cell_output(page, "%mlc_time mlp_model MLPModule_lib")
        race.scroll_into_view_if_needed()
        screenshot(race, f"learner_mlp_race_{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_tuning_curves_never_read_zero_and_numbers_say_what_they_measured(notebooks, width):
    page = notebooks["05"]
    _at_width(page, width)
    curves = page.locator("svg.mlc-tune-curve")
    assert curves.count() >= 3  # the MLP's two kernels, linear0, ResNet-18's kernel
    zeros = []
    for output in _outputs(page).all():
        zeros += output.evaluate(ZERO_TICKS_JS)
    assert zeros == [], zeros
    for source in ("%mlc_tune mlp_relax", "%mlc_tune MyModuleMixture", "%mlc_tune resnet_relax"):
        output = _cell_output(page, source)
        text = unwrapped(output.inner_text())
        # the progress figure is the search's own, the result's are timed in turns: each says so
        progress = re.findall(r"\] \d+(?:/\d+)? trials.*?, best (\S+ \S+)", text)
        assert progress and all(p.startswith("candidate") for p in progress), source
        assert "the whole model timed in turns with the default build" in text, source
        assert "kernels  default and tuned: each kernel per call, timed in turns" in text
        assert re.search(r"speed-up (\d+\.\d+x|no measurable change|none: the default)", text)
        # its lines wrap at the output's width, under their labels: none scrolls out of view
        assert output.evaluate(OVERFLOWING_LINES_JS) == [], source
    screenshot(_cell_output(page, "%mlc_tune MyModuleMixture"), f"learner_small_curve_{width}")
    screenshot(_cell_output(page, "%mlc_tune resnet_relax"), f"learner_resnet18_tune_{width}")


def test_a_tuned_model_is_never_reported_slower_than_its_default(notebooks):
    text = _cell_output(notebooks["05"], "%mlc_tune resnet_relax").inner_text()
    if re.search(r"kept\s+the default build", text):  # the tuned build timed slower: not kept
        assert "speed-up none: the default build is kept" in text
        assert "kept the default build: the tuned model timed slower" in text  # the note
        return
    tuned = re.search(r"tuned\s+([\d.]+) (us|ms)", text)
    default = re.search(r"default\s+([\d.]+) (us|ms)", text)
    scale = {"us": 1e-6, "ms": 1e-3}
    slower = float(tuned[1]) * scale[tuned[2]] > float(default[1]) * scale[default[2]]
    assert not slower or "no measurable change" in text


@pytest.mark.parametrize("name", ["00", "05"])
def test_a_timing_table_has_at_most_one_warning_in_plain_words(notebooks, name):
    page = notebooks[name]
    # each displayed table on its own (a --breakdown cell shows the race, then the profile)
    for output in page.locator(".jp-CodeCell .jp-OutputArea-output").all():
        text = output.inner_text()
        if "variant" not in text or "median" not in text:
            continue
        warnings = [line for line in text.splitlines() if line.startswith("warning:")]
        assert len(warnings) <= 1, warnings
        assert all("too close to call" in w for w in warnings if "runs vary" in w)

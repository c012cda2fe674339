"""The concept blog (``shared/course/002_…``), pasted cell by cell into a real kernel in course
mode, runs whole and prints what the blog shows, up to the timings.

The code is the blog's; only sizes are lowered to keep the run short: the matrices (M, K, L, N
and, to match, the hand-edited module's shapes and loop extents) are an eighth of the blog's, and
the MetaSchedule search has 16 trials instead of 64. The blog's first fence is PyTorch
pseudo-code describing the computation (``torch.empty(..., name='A')`` is not PyTorch's API) and
is left out. Held-out checks (not in the blog) sit between the cells: the blog's TE schedule is
the TensorIR schedule it writes next, and every build computes ``exp(A @ B) @ E``.
"""

from __future__ import annotations

import html
import re

import pytest
from course_support import COURSE, cell_errors, cell_text, run_in_kernel, seed_cells

from mlc_jupyter.dialect import course_spelling

SIZES = [("M = 1024\nK = 2048\nL = 1024\nN = 3072", "M = 128\nK = 256\nL = 128\nN = 384")]
#: The hand-edited module (fence 617) at the same eighth: shapes, block domains, loop extents.
MODULE_SIZES = [
    ("(1024, 2048)", "(128, 256)"), ("(2048, 1024)", "(256, 128)"), ("(1024, 3072)", "(128, 384)"),
    ("(1024, 1024)", "(128, 128)"), ("T.grid(64)", "T.grid(8)"), ("T.grid(128)", "T.grid(16)"),
    ("T.grid(256, 16, 8, 8)", "T.grid(32, 16, 8, 8)"),
    ("T.grid(384, 128, 16, 8, 8)", "T.grid(48, 16, 16, 8, 8)"),
    ("T.axis.spatial(1024,", "T.axis.spatial(128,"), ("T.axis.reduce(2048,", "T.axis.reduce(256,"),
    ("T.axis.spatial(3072,", "T.axis.spatial(384,"), ("T.axis.reduce(1024,", "T.axis.reduce(128,"),
]  # fmt: skip
TRIALS = [("max_trials_global=64", "max_trials_global=16"),
          ("num_trials_per_iter=64", "num_trials_per_iter=16")]  # fmt: skip
PSEUDO_CODE = 117

#: The result every build must compute, from the blog's own input arrays.
REFERENCE = "f_ref = np.exp(a_nd.numpy() @ b_nd.numpy()) @ e_nd.numpy()\n"


def _close(what: str) -> str:
    return (
        # exp(A @ B) spans many orders of magnitude and E's signs cancel: compare at F's scale
        f"np.testing.assert_allclose({what}, f_ref, rtol=1e-3, atol=1e-4 * abs(f_ref).max())\n"
        "print('checked')\n"
    )


#: Held-out checks, run right after the blog's fence of that line.
CHECKS = {
    197: REFERENCE,
    # the TE build computes F (into the tensor the module holds for it: args leave F out)
    233: _close('rt_lib.scratch_tensors("default_function")[0].numpy()'),
    361: "te_tiled = tir_sch\n%mlc_trace te_tiled --static\n",
    # the blog's TE schedule is the TensorIR schedule it writes next
    482: "from mlc_jupyter.tvm_compat import structural_equal\n"
    "print('same', structural_equal(tvm.lower(te_tiled, [A, B, E, F])['main'], "
    "tir_sch.mod['main']))\n" + _close("f_nd.numpy()"),
    677: _close("f_nd.numpy()"),
    1149: _close("f_nd.numpy()"),
}

TIMED = re.compile(r"^Time cost of transformed sch\.mod [0-9.e-]+ sec$", re.M)
TIMED_NUMPY = re.compile(r"^Time cost of numpy [0-9.e-]+ sec$", re.M)


def _lowered(line: int, text: str) -> str:
    for old, new in SIZES + (MODULE_SIZES if line == 617 else []) + TRIALS:
        text = text.replace(old, new)
    return text


def _blog_outputs() -> tuple[dict[int, str], dict[int, str]]:
    """The blog's printed IR (HTML blocks, as text) and plain outputs, by the fence before them."""
    lines = next(COURSE.glob("002_*.txt")).read_text(encoding="utf-8").split("\n")
    fence, printed, plain = 0, {}, {}
    in_html, in_fence = False, False
    for number, line in enumerate(lines, start=1):
        if line.startswith("```"):
            in_fence = not in_fence
            fence = number if line.strip() == "```python" else fence
        elif line.startswith('<div class="highlight"'):
            in_html, printed[fence] = True, ""
        elif in_html:
            printed[fence] += html.unescape(re.sub(r"<[^>]+>", "", line)) + "\n"
            in_html = "</pre></div>" not in line
        elif not in_fence and line.startswith("    ") and fence:
            plain[fence] = plain.get(fence, "") + line[4:] + "\n"
    return printed, plain


def _loop_vars(text: str) -> list[str]:
    """The loop variables of printed IR in order, the old TE names (``rk_outer``, ``m_inner``) as
    TensorIR names them (``rk_0``, ``m_1``) and the old lowering's separate ``_init`` loops out
    (TensorIR keeps the init in the block)."""
    names = []
    for line in text.splitlines():
        found = re.match(r"\s*for (.+?) in ", line)
        if found:
            names += [n.strip() for n in found.group(1).split(",")]
    names = [n for n in names if not n.endswith("_init")]
    return [n.replace("_outer", "_0").replace("_inner", "_1") for n in names]


def _shown_ir(cell) -> str:
    return "".join(
        html.unescape(re.sub(r"<[^>]+>", "", out["data"]["text/html"]))
        for out in cell.outputs
        if out.output_type == "display_data" and "text/html" in out.get("data", {})
    )


@pytest.mark.slow
def test_the_concept_blogs_cells_run_in_order_and_print_what_the_blog_shows():
    cells = seed_cells("002")
    run: list[str] = []
    index: dict[int, int] = {}  # fence -> notebook cell (after the setup cell)
    check_index: dict[int, int] = {}
    for line, text in cells.items():
        if line == PSEUDO_CODE:
            continue
        run.append(_lowered(line, text))
        index[line] = len(run)
        if line in CHECKS:
            run.append(CHECKS[line])
            check_index[line] = len(run)
    assert len(index) == 19
    nb = run_in_kernel(run, timeout=900)
    assert cell_errors(nb) == []
    printed, plain = _blog_outputs()
    for line, at in index.items():
        cell = nb.cells[at]
        text = cell_text(cell)
        blog_says = plain.get(line, "")
        if "Time cost of transformed" in blog_says:
            assert len(TIMED.findall(text)) == 1, (line, text)
        if "Time cost of numpy" in blog_says:
            assert len(TIMED_NUMPY.findall(text)) == 1, (line, text)
        if line in printed and line != 1149:  # 1149: what the search found, not the blog's
            assert _loop_vars(_shown_ir(cell)) == _loop_vars(printed[line]), line
    # print(tir_sch.trace): the blog's steps, in 0.27's names (get_sblock) as TVM prints them
    trace = cell_text(nb.cells[index[814]])
    steps = [s.strip() for s in course_spelling(trace).splitlines() if "sch." in s]
    assert steps[1:] == [s.strip() for s in plain[814].splitlines() if "sch." in s][1:], trace
    for line in (233, 482, 677, 1149):
        assert "checked" in cell_text(nb.cells[check_index[line]]), line
    assert "same True" in cell_text(nb.cells[check_index[482]])
    traced = nb.cells[check_index[361]].outputs[-1]["data"]["text/plain"]
    assert "ko, ki = sch.split(loop=rk, factors=[None, 8]" in traced, traced

"""The course seeds beside the book (``shared/course``): their code, pasted into plain cells in
course mode, runs as written, or stops where TVM 0.27 has no equivalent with the 0.27 way."""

from __future__ import annotations

import pytest
from course_support import cell_errors, cell_text, run_in_kernel, seed_cells
from IPython.utils.capture import capture_output


def _run(shell, text: str):
    with capture_output() as captured:
        result = shell.run_cell(text, store_history=True)
    return result, captured


def test_the_tvm_flow_articles_relay_cell_runs_up_to_relay_and_names_the_relax_way(shell):
    """004's GraphExecutor example: ``import tvm`` runs, ``from tvm import relay`` stops the cell
    at its line, as Python would, with Relax's way in one short message."""
    cell = seed_cells("004")[1645]
    assert cell.splitlines()[2] == "from tvm import relay"
    result, captured = _run(shell, cell)
    assert isinstance(result.error_in_exec, ImportError)
    out = captured.stdout
    assert "GoneError: line 3, column 1: from tvm import relay is gone in TVM 0.27" in out, out
    assert "from_exported_program" in out and "relax.VirtualMachine" in out
    assert "Traceback" not in out and len(out.strip().splitlines()) <= 6, out
    assert "tvm" in shell.user_ns and "batch_norm" not in shell.user_ns


def _homework_setup() -> str:
    """000's homework header as written, less torchvision (not a dependency: models are written
    in plain PyTorch) and plus ``import IPython``, which its cells call and the notes' first
    cell (not in the notes) imported."""
    header = seed_cells("000")[447]
    kept = [line for line in header.splitlines() if "torchvision" not in line]
    assert len(kept) == len(header.splitlines()) - 2
    return "import IPython\n" + "\n".join(kept) + "\n"


def _shown(captured) -> str:
    return captured.stdout


def _printed_equals(shell, printed: str, func) -> bool:
    """The notes' printed function, parsed in course mode, is ``func``."""
    from mlc_jupyter.tvm_compat import structural_equal

    shell.run_cell_magic("tir", "printed_func --quiet", printed)
    return structural_equal(shell.user_ns["printed_func"], func)


def test_the_notes_homework_compute_inline_and_fuse_run_as_written_and_print_what_they_show(
    shell,
):
    cells = seed_cells("000")
    result, captured = _run(shell, _homework_setup())
    assert result.success, (result.error_in_exec, captured.stdout)
    for code, printed_before, step, printed_after in ((514, 536, 559, 564), (580, 597, 613, 619)):
        result, captured = _run(shell, cells[code])
        assert result.success, (cells[code], result.error_in_exec, captured.stdout)
        assert "@T.prim_func" in _shown(captured)  # IPython.display.Code of the function
        assert _printed_equals(shell, cells[printed_before], shell.user_ns["sch"].mod["main"])
        result, captured = _run(shell, cells[step])
        assert result.success, (cells[step], result.error_in_exec, captured.stdout)
        after = shell.user_ns["sch"].mod["main"]
        assert _printed_equals(shell, cells[printed_after], after), cells[printed_after]
    assert "i_j_fused" in _shown(captured)


#: Section 6.2 in Chinese (001): its code cells in order (148 is a block excerpt, not code) and,
#: after each cell that shows a module, the fence of the module as the notes print it (TVM's
#: older format: ``T.Buffer[...]``, ``# function attr dict``, ``T.var``) and what it shows.
SECTION_6_2_CELLS = (
    9,
    32,
    70,
    77,
    87,
    113,
    159,
    174,
    220,
    238,
    269,
    309,
    386,
    432,
    496,
    500,
    566,
    593,
)
SECTION_6_2_PRINTED = {
    113: (117, "MatmulBlockModule"), 174: (186, "sch.mod"), 238: (248, "sch.mod"),
    269: (274, "sch.mod"), 309: (320, "sch.mod"), 432: (437, "sch.mod"), 500: (504, "sch.mod"),
}  # fmt: skip


@pytest.mark.slow
def test_section_6_2_in_chinese_runs_as_written_and_its_older_printouts_are_its_modules():
    """Every cell of 001 runs in a real kernel (the tensorized matmul on the C micro-kernel,
    checked against NumPy by the notes' own assert). Each module the notes print, in the older
    format, parses in course mode and is the module TVM 0.27 made at that step; the tensorized
    one (whose match buffers' strides TVM 0.27 itself does not print back equal) calls tmm16 as
    the printout does."""
    cells = seed_cells("001")
    run: list[str] = []
    checks: dict[int, int] = {}
    for fence in SECTION_6_2_CELLS:
        run.append(cells[fence])
        if fence in SECTION_6_2_PRINTED:
            printed, shown = SECTION_6_2_PRINTED[fence]
            run.append(cells[printed].replace("class Module:", "class PrintedModule:"))
            check = (
                "from mlc_jupyter.tvm_compat import structural_equal\n"
                f"print('printed', {printed}, structural_equal(PrintedModule, {shown}))\n"
                "print('calls', [s.count('tmm16') for s in (PrintedModule.script(), "
                f"{shown}.script())])\n"
            )
            run.append(check)
            checks[printed] = len(run)  # the check's cell (after the setup cell)
    nb = run_in_kernel(run)
    assert cell_errors(nb) == []
    for printed, index in checks.items():
        text = cell_text(nb.cells[index])
        if printed == 504:
            assert "calls [1, 1]" in text, text
        else:
            assert f"printed {printed} True" in text, text

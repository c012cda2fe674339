"""The course seeds beside the book (``shared/course``): their code, pasted into plain cells in
course mode, runs as written, or stops where TVM 0.27 has no equivalent with the 0.27 way."""

from __future__ import annotations

from course_support import seed_cells
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

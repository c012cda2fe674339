"""Course mode's AST transforms as pure rewrites of a cell's syntax tree (no IPython, no TVM)."""

from __future__ import annotations

import ast
import textwrap

from mlc_jupyter.cells.course_transforms import CheckDefinitions, NameScheduleHandles
from mlc_jupyter.tvm_compat import GET_BLOCK_METHOD


def _rewritten(transform: ast.NodeTransformer, cell: str) -> tuple[ast.Module, list[str]]:
    tree = transform.visit(ast.parse(textwrap.dedent(cell)))
    compile(tree, "<cell>", "exec")  # what IPython does next: the tree must stay valid
    return tree, ast.unparse(tree).splitlines()


def test_each_top_level_tvmscript_definition_is_checked_right_after_it():
    tree, lines = _rewritten(
        CheckDefinitions(),
        """
        @T.prim_func
        def add(A: T.Buffer((4,), "float32")):
            pass

        @tvm.script.ir_module
        class Module:
            pass

        @T.prim_func(private=True)
        def hidden():
            pass

        def helper():
            @T.prim_func
            def inner():
                pass
        """,
    )
    checks = [line for line in lines if "check_definition" in line]
    assert checks == [
        "mlc_course.check_definition(add, 'add')",
        "mlc_course.check_definition(Module, 'Module')",
        "mlc_course.check_definition(hidden, 'hidden')",
    ]  # a plain function, and a definition inside one, are not checked
    calls = [s for s in tree.body if isinstance(s, ast.Expr)]
    definitions = [s for s in tree.body if isinstance(s, ast.FunctionDef | ast.ClassDef)]
    assert [c.lineno for c in calls] == [d.lineno for d in definitions[:3]]  # errors name it


def test_schedule_handles_are_named_after_each_assignment_in_functions_too():
    # the transforms see the cell after translation: TVM 0.27's name of get_block
    _, lines = _rewritten(
        NameScheduleHandles(),
        f"""
        i, j, k = sch.get_loops(b)
        x = compute(1)
        sch.obj = sch.{GET_BLOCK_METHOD}("C")

        def stochastic_schedule_mm(sch):
            block_C = sch.{GET_BLOCK_METHOD}("C", "main")
            if True:
                j_0, j_1 = sch.split(j, factors=[None, 4])
        """,
    )
    named = [line.strip() for line in lines if "name_handles" in line]
    assert named == [
        "mlc_course.name_handles({'i': i, 'j': j, 'k': k})",
        "mlc_course.name_handles({'block_C': block_C})",
        "mlc_course.name_handles({'j_0': j_0, 'j_1': j_1})",
    ]  # not after other calls, nor after a handle stored in an attribute
    at = {line.strip(): n for n, line in enumerate(lines)}
    assert (
        at["mlc_course.name_handles({'i': i, 'j': j, 'k': k})"]
        == at["i, j, k = sch.get_loops(b)"] + 1
    )

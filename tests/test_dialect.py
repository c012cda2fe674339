"""The course's spelling is rewritten to TVM 0.27's without moving lines, and columns map back."""

from __future__ import annotations

from mlc_jupyter.dialect import table_markdown, translate


def test_course_spelling_becomes_tvm_027_spelling_line_for_line():
    course = (
        "from tvm.script import ir as I, tir as T\n"
        "@T.prim_func\n"
        "def f(A: T.Buffer[(4,), 'float32']):\n"
        '    T.func_attr({"global_symbol": "f", "tir.noalias": True})\n'
        '    with T.block("x"):\n'
        "        pass\n"
        "sch = tvm.tir.Schedule(mod)\n"
        'b = sch.get_block("x")\n'
        "y = R.call_tir(cls.f, (x,), out_sinfo=R.Tensor((4,), 'float32'))\n"
    )
    out = translate(course).source.splitlines()
    assert len(out) == len(course.splitlines())
    assert out[0] == "from tvm.script import ir as I, tirx as T"
    assert out[1] == "@T.prim_func(s_tir=True)"
    assert '"tirx.noalias": True' in out[3]
    assert 'with T.sblock("x"):' in out[4]
    assert out[6] == "sch = tvm.s_tir.Schedule(mod)"
    assert out[7] == 'b = sch.get_sblock("x")'
    assert "out_ty=R.Tensor" in out[8]


def test_modern_spelling_passes_through_unchanged():
    modern = (
        "from tvm.script import tirx as T\n"
        "@T.prim_func(s_tir=True, private=True)\n"
        'def f():\n    with T.sblock("x"):\n        T.func_attr({"tirx.noalias": True})\n'
    )
    assert translate(modern).source == modern


def test_private_prim_func_gains_s_tir_and_keeps_its_arguments():
    assert (
        translate("@T.prim_func(private=True)").source == "@T.prim_func(s_tir=True, private=True)"
    )


def test_columns_after_a_rewrite_map_back_to_what_the_user_typed():
    t = translate('    with T.block("x"): y = T.block("y") + q')
    line = t.source
    q_col = line.index("q") + 1
    assert (
        t.original_column(1, q_col) == '    with T.block("x"): y = T.block("y") + q'.index("q") + 1
    )
    # A column inside a rewritten name points at the start of the name as typed.
    assert t.original_column(1, line.index("sblock") + 3) == line.index("T.") + 1


def test_the_translation_table_lists_every_rule():
    table = table_markdown()
    assert "T.block" in table and "tir.noalias" in table and "out_sinfo" in table

"""The course's spelling is rewritten to TVM 0.27's without moving lines, and columns map back."""

from __future__ import annotations

from pathlib import Path

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


# --- course mode (ordinary Python cells): token-aware, shims, gone spellings, modern untouched

MODERN_027 = [
    # TVMScript in 0.27's spelling
    "from tvm.script import ir as I, tirx as T, relax as R\n"
    "@I.ir_module\nclass M:\n    @T.prim_func(s_tir=True)\n"
    "    def f(A: T.Buffer((4,), 'float32'), B: T.Buffer((4,), 'float32')):\n"
    '        T.func_attr({"tirx.noalias": True})\n'
    "        Y = T.alloc_buffer((4,), 'float32')\n"
    "        for i in range(4):\n"
    '            with T.sblock("B"):\n                B[i] = A[i]\n',
    # schedules, builds, runtime, tuning, Relax, registration
    "import tvm\nfrom tvm import s_tir\nsch = tvm.s_tir.Schedule(mod)\n"
    'b = sch.get_sblock("Y", func_name="mm")\ni, j, k = sch.get_loops(b)\n'
    "j0, j1 = sch.split(j, factors=[None, 4])\n",
    "ex = tvm.compile(mod, target={'kind': 'llvm', 'num-cores': 2})\n"
    "a = tvm.runtime.tensor(x, device=tvm.cpu())\nc = tvm.runtime.empty((4,), 'float32')\n"
    "ex['f'](a, c)\ntimer = ex.mod.time_evaluator('f', tvm.cpu(), number=10)\n",
    "from tvm.s_tir import meta_schedule as ms\n"
    "db = ms.tune_tir(mod=mod, target=target, work_dir='w', max_trials_global=8)\n"
    "sch = ms.tir_integration.compile_tir(db, mod['main'], target)\n",
    "from tvm import relax\nex = tvm.compile(mod, target='llvm')\n"
    "vm = relax.VirtualMachine(ex, tvm.cpu())\nw = relax.const(np.zeros(4), 'float32')\n"
    "x = relax.Var('x', relax.TensorType((1, 784), 'float32'))\nprint(x.ty.shape)\n"
    "y = R.call_tir(cls.f, (x,), out_ty=R.Tensor((4,), 'float32'))\n",
    "@tvm.register_global_func('env.linear', override=True)\ndef f(x, out):\n    pass\n",
    "from tvm.support import utils\ntmp = utils.tempdir()\n"
    "ok = tvm_ffi.structural_equal(a, b)\nsrc = ex.mod.imports[0].inspect_source()\n",
    # strings and comments that name old spellings are not code
    "# tvm.nd.array and tvm.build were renamed; from tvm import meta_schedule\n"
    'print("tvm.nd.array(x), tvm.tir.Schedule, sch.get_block(name)")\n'
    's = """from tvm.script import tir as T\n@T.prim_func\ntvm.build(mod)"""\n',
]


def test_relax_build_is_a_shared_spelling_that_course_cells_build_through_the_project():
    text = "ex = relax.build(mod, target='llvm')\nex2 = tvm.relax.build(mod)\n"
    assert translate(text).source == text  # magic cells: TVM 0.27's own
    assert translate(text, shims=True).source == (
        "ex = mlc_course.relax_build(mod, target='llvm')\nex2 = mlc_course.relax_build(mod)\n"
    )


def test_modern_027_code_passes_through_byte_identical_in_every_mode():
    for text in MODERN_027:
        assert translate(text).source == text
        assert translate(text, shims=True).source == text


def test_the_projects_notebooks_pass_through_course_mode_unchanged():
    """Every cell of the project's notebooks, except those marked as written in the course's
    spelling on purpose (metadata ``course_spelling``), is modern code."""
    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager

    manager = TransformerManager()
    notebooks = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and not cell.metadata.get("course_spelling"):
                text = manager.transform_cell(cell.source)  # what course mode sees
                assert translate(text, shims=True).source == text, (path.name, cell.source)


def test_strings_and_comments_keep_old_names_but_the_noalias_key_is_rewritten():
    cell = (
        "x = tvm.nd.array(a)  # tvm.nd.array here stays\n"
        "print(\"tvm.nd.array(a)\", 'tir.noalias')\n"
        'T.func_attr({"global_symbol": "f", "tir.noalias": True})\n'
    )
    out = translate(cell).source.splitlines()
    assert out[0] == "x = tvm.runtime.tensor(a)  # tvm.nd.array here stays"
    assert out[1] == "print(\"tvm.nd.array(a)\", 'tirx.noalias')"  # a whole literal: the key
    assert out[2] == 'T.func_attr({"global_symbol": "f", "tirx.noalias": True})'
    assert translate('s = "the tir.noalias key"').changed is False  # part of a longer text


def test_python_cells_route_gone_behaviour_to_the_course_shims():
    cell = (
        "from tvm import meta_schedule as ms\n"
        'lib = tvm.build(MyModule, target="llvm")\n'
        "a = tvm.nd.array(x, tvm.cuda(0))\n"
        "sch = tvm.tir.Schedule(MyModule)\n"
        "from tvm.contrib import utils, clang\n"
        'c = relax.const(v, relax.TensorStructInfo(v.shape, "float32"))\n'
    )
    out = translate(cell, shims=True).source.splitlines()
    assert out[0] == "from mlc_jupyter.course import tuning as ms"
    assert out[1] == 'lib = mlc_course.build(MyModule, target="llvm")'
    assert out[2] == "a = mlc_course.nd.array(x, tvm.cuda(0))"
    assert out[3] == "sch = tvm.s_tir.Schedule(MyModule)"
    assert out[4] == "from mlc_jupyter.course.contrib import utils, clang"
    assert out[5] == 'c = mlc_course.relax_const(v, relax.TensorType(v.shape, "float32"))'
    # in magic cells (TVMScript) the plain 0.27 names are used, tvm.build is left alone
    plain = translate(cell).source.splitlines()
    assert plain[0] == "from tvm.s_tir import meta_schedule as ms"
    assert plain[1] == 'lib = tvm.build(MyModule, target="llvm")'


def test_relax_const_is_rewritten_only_in_cells_that_use_the_course_struct_info():
    assert translate("w = relax.const(v, 'float32')", shims=True).changed is False


def test_course_function_buffers_move_to_the_root_block_and_modern_ones_stay():
    course = (
        "@T.prim_func\n"
        "def f(A: T.Buffer((4,), 'float32'),\n"
        "      B: T.Buffer((4,), 'float32')):\n"
        "    Y = T.alloc_buffer((4,), 'float32')\n"
        "    for i in range(4):\n"
        '        with T.block("B"):\n'
        "            Z = T.alloc_buffer((1,), 'float32')\n"
    )
    out = translate(course).source.splitlines()
    assert out[3] == "    Y = T.sblock_alloc_buffer((4,), 'float32')"
    assert out[6] == "            Z = T.alloc_buffer((1,), 'float32')"  # inside a block: as typed
    modern = course.replace("@T.prim_func\n", "@T.prim_func(s_tir=True)\n")
    assert "T.alloc_buffer((4,)" in translate(modern).source


def test_gone_spellings_are_found_at_their_line_and_column():
    gone = translate("import tvm\nx = tvm.autotvm.task\nfrom tvm import relay\n").gone
    assert [(g.line, g.column, g.text) for g in gone] == [
        (2, 5, "tvm.autotvm"),
        (3, 1, "from tvm import relay"),
    ]
    assert "MetaSchedule" in gone[0].rule.gone and "tvm.compile" in gone[1].rule.gone


def test_legacy_te_schedules_go_to_the_course_shim_in_python_cells_only():
    typed = "s: te.Schedule = te.create_schedule(C.op)\nm = tvm.lower(s, [A, B, C])\n"
    assert translate(typed, shims=True).source == (
        "s: mlc_course.TESchedule = mlc_course.create_schedule(C.op)\n"
        "m = mlc_course.lower(s, [A, B, C])\n"
    )
    assert translate(typed).source == typed and not translate(typed).gone


def test_changed_lines_pair_what_was_typed_with_what_runs():
    t = translate("x = 1\nrt = tvm.build(m)\n", shims=True)
    assert t.changed_lines() == [(2, "rt = tvm.build(m)", "rt = mlc_course.build(m)")]
    assert t.original_column(2, len("rt = mlc_course.build(") + 1) == len("rt = tvm.build(") + 1


def test_the_readme_carries_the_generated_translation_table():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert table_markdown() in readme, "regenerate it: python -m mlc_jupyter.dialect"


def test_printed_ir_shows_in_the_course_spelling_and_translates_back():
    from build_support import listing

    from mlc_jupyter.dialect import course_spelling

    modern = listing("ch2_mm_relu.py", "MyModule").script()
    course = course_spelling(modern)
    assert 'with T.block("Y"):' in course and "Y = T.alloc_buffer((128, 128))" in course
    assert "@T.prim_func\n" in course and '"tir.noalias"' in course and "sblock" not in course
    code = [line for line in modern.splitlines() if not line.lstrip().startswith("#")]
    back = translate(course).source.splitlines()
    assert [line for line in back if not line.lstrip().startswith("#")] == code
    assert course_spelling('b0 = sch.get_sblock(name="Y")') == 'b0 = sch.get_block(name="Y")'


def test_t_bool_in_function_attributes_becomes_a_python_bool_and_elsewhere_stays():
    """Older TVMs printed ``T.func_attr({"tir.noalias": T.bool(True)})`` (the concept blog copied
    it); 0.27 parses it but cannot build it."""
    t = translate(
        '    T.func_attr({"tir.noalias": T.bool(True), "x": T.bool( False )})\nb = T.bool(True)'
    )
    out = t.source.splitlines()
    assert out[0] == '    T.func_attr({"tirx.noalias": True, "x": False})'
    assert out[1] == "b = T.bool(True)"
    assert t.original_column(1, out[0].index('"x"') + 1) == t.original.index('"x"') + 1

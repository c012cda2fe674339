"""The layer contract and the TVM boundary (docs/DEVELOPING.md, "Layers"), checked on the source.

Every import in ``mlc_jupyter/`` (function-level ones included) must point down the layers
``magics -> widgets -> display -> services -> core``, a service may use only the services listed
for it, and only the boundary modules may name what TVM moved between releases. A new package
or top-level module fails here until it is classified in ``UNITS`` (one place).
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mlc_jupyter"
HERE = "tests/test_layers.py"

#: Layers from the top; a unit may import units of its own layer's rank or lower (see ``allowed``).
RANK = {"package": 5, "magics": 4, "widgets": 3, "display": 2, "service": 1, "core": 0}

#: Every top-level module or package of mlc_jupyter and its layer. Classify new ones HERE.
UNITS = {
    "__init__": "package",  # the public API; loads the magics only when IPython asks
    "magics": "magics",
    "widgets": "widgets",
    "display": "display",
    "cells": "service",
    "compilation": "service",
    "course": "service",  # the course shims ordinary cells reach in course mode
    "graph": "service",
    "measure": "service",
    "models": "service",
    "passes": "service",
    "schedule": "service",
    "trace": "service",
    "tune": "service",
    "config": "core",
    "dialect": "core",
    "errors": "core",
    "origins": "core",  # where IR came from: cell lines of TVMScript spans, schedule steps
    "results": "core",
    "textedit": "core",
    "tvm_compat": "core",
}

#: Which service may import which (core is always allowed). Keep this a DAG.
SERVICE_USES = {
    "cells": set(),
    "compilation": set(),
    "graph": set(),
    "schedule": set(),
    "measure": {"cells", "compilation"},  # cells: the machine-limit kernels are TVMScript
    "course": {"compilation", "measure", "tune"},
    "models": {"compilation"},
    "passes": {"compilation", "graph", "schedule"},
    "tune": {"compilation", "measure"},
    "trace": {"compilation", "measure", "schedule", "tune"},
}

#: Modules that may import TVM and name what moved between TVM releases.
BOUNDARY = {"tvm_compat.py", "dialect.py"}
#: Third-party packages of the notebook front end, which core and services never import.
FRONT_END_PACKAGES = {"IPython", "ipywidgets", "anywidget", "traitlets", "ipykernel"}
#: Names TVM 0.27 gave to things the course spells differently (the next release may rename
#: them again), as whole words in code, strings and docstrings (comments are free).
MOVED_NAMES = re.compile(
    r"\b(s_tir|tirx|sblock|SBlock[A-Za-z]*|get_sblock|GetSBlock|meta_schedule)\b"
)
#: Attributes of the ``tvm`` module that moved: ``tvm.compile`` (was ``tvm.build``) and friends.
MOVED_TVM_ATTRIBUTES = {"compile", "build", "nd", "tir", "tirx", "s_tir", "meta_schedule"}

SKIP_DIRS = {"labextension", "__pycache__"}


def _sources() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if not SKIP_DIRS & set(p.relative_to(PACKAGE).parts)
    )


def _unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _imports(path: Path) -> list[tuple[int, str, str]]:
    """``(line, unit or "", top-level external package or "")`` for every import in ``path``."""
    rel = path.relative_to(PACKAGE).with_suffix("")
    package = list(rel.parts[:-1])
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
            names = [target[0]] if target else [alias.name for alias in node.names]
            found += [(node.lineno, name, "") for name in names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, *_absolute(node.module or "")))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, *_absolute(alias.name)) for alias in node.names]
    return found


def _absolute(module: str) -> tuple[str, str]:
    parts = module.split(".")
    if parts[0] == "mlc_jupyter":
        return (parts[1] if len(parts) > 1 else "__init__"), ""
    return "", parts[0]


def allowed(src: str, dst: str) -> bool:
    """May unit ``src`` import unit ``dst``?"""
    if src == dst:
        return True
    src_layer, dst_layer = UNITS[src], UNITS[dst]
    if src_layer == "service" and dst_layer == "service":
        return dst in SERVICE_USES.get(src, set())
    if src_layer == dst_layer:
        return src_layer == "core"
    return RANK[dst_layer] < RANK[src_layer]


def _where(path: Path, line: int) -> str:
    return f"mlc_jupyter/{path.relative_to(PACKAGE)}:{line}"


def test_every_package_and_module_is_classified_in_one_place():
    units = {_unit(p) for p in _sources()}
    missing = sorted(units - set(UNITS))
    assert not missing, (
        f"not in the layer contract: {', '.join('mlc_jupyter/' + m for m in missing)}. "
        f"Add each to UNITS in {HERE} (layer {', '.join(RANK)}), a service also to "
        "SERVICE_USES (the services it may import), and a row to the layer table in "
        "docs/DEVELOPING.md"
    )
    gone = sorted(set(UNITS) - units)
    assert not gone, f"UNITS in {HERE} names units that no longer exist: {gone}"
    unlisted = sorted(
        u for u, layer in UNITS.items() if layer == "service" and u not in SERVICE_USES
    )
    assert not unlisted, f"services without a SERVICE_USES entry in {HERE}: {unlisted}"


def test_imports_point_down_the_layers_and_services_use_only_what_they_declare():
    wrong = []
    for path in _sources():
        src = _unit(path)
        if src not in UNITS:
            continue  # reported by the classification test
        for line, dst, _ in _imports(path):
            if dst and dst in UNITS and not allowed(src, dst):
                wrong.append(
                    f"{_where(path, line)}: {src} ({UNITS[src]}) imports {dst} ({UNITS[dst]})"
                )
    assert not wrong, (
        "imports against the layer contract (magics -> widgets -> display -> services -> core; "
        f"a service imports only the services SERVICE_USES in {HERE} lists):\n" + "\n".join(wrong)
    )


def test_the_services_form_no_cycle():
    seen: dict[str, int] = {}

    def visit(name: str, path: tuple[str, ...]) -> None:
        if seen.get(name) == 1:
            raise AssertionError(f"services depend on each other in a cycle: {' -> '.join(path)}")
        if seen.get(name) == 2:
            return
        seen[name] = 1
        for dep in sorted(SERVICE_USES.get(name, ())):
            visit(dep, (*path, dep))
        seen[name] = 2

    for name in SERVICE_USES:
        visit(name, (name,))


def test_core_and_services_import_no_notebook_front_end():
    wrong = [
        f"{_where(path, line)}: {_unit(path)} imports {ext}"
        for path in _sources()
        if UNITS.get(_unit(path)) in ("core", "service")
        for line, _, ext in _imports(path)
        if ext in FRONT_END_PACKAGES
    ]
    assert not wrong, (
        "core and services are plain Python + TVM (a script can call them); move the notebook "
        "part to magics/, widgets/ or display/:\n" + "\n".join(wrong)
    )


def test_only_the_boundary_imports_tvm():
    wrong = [
        f"{_where(path, line)}: imports {ext}"
        for path in _sources()
        if path.relative_to(PACKAGE).as_posix() not in BOUNDARY
        for line, _, ext in _imports(path)
        if ext in ("tvm", "tvm_ffi")
    ]
    assert not wrong, (
        "TVM is imported only by mlc_jupyter/tvm_compat.py; ask it for the module or name "
        "(add a small function there when none fits):\n" + "\n".join(wrong)
    )


def _moved_name_uses(path: Path) -> list[str]:
    found = []
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    for tok in tokens:
        if tok.type in (tokenize.NAME, tokenize.STRING) and MOVED_NAMES.search(tok.string):
            word = MOVED_NAMES.search(tok.string).group(0)
            found.append(f"{_where(path, tok.start[0])}: {word}")
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Attribute) and node.attr in MOVED_TVM_ATTRIBUTES:
            base = node.value
            is_tvm = (isinstance(base, ast.Name) and base.id in ("tvm", "_tvm")) or (
                isinstance(base, ast.Call)
                and isinstance(base.func, ast.Name)
                and base.func.id == "tvm"
            )
            if is_tvm:
                found.append(f"{_where(path, node.lineno)}: tvm.{node.attr}")
    return found


def test_no_version_specific_tvm_name_outside_the_boundary():
    wrong = [
        use
        for path in _sources()
        if path.relative_to(PACKAGE).as_posix() not in BOUNDARY
        for use in _moved_name_uses(path)
    ]
    assert not wrong, (
        "names that moved between TVM releases belong in mlc_jupyter/tvm_compat.py (or the "
        "dialect rules); use or add a function or constant there, and reword docstrings:\n"
        + "\n".join(wrong)
    )


@pytest.mark.parametrize(
    ("src", "dst", "ok"),
    [
        ("magics", "tune", True),
        ("widgets", "display", True),
        ("display", "widgets", False),
        ("tune", "magics", False),
        ("measure", "tune", False),
        ("trace", "tune", True),
        ("results", "compilation", False),
        ("errors", "results", True),
    ],
)
def test_the_contract_itself_reads_as_documented(src, dst, ok):
    assert allowed(src, dst) is ok


def test_a_violation_would_be_reported(tmp_path, monkeypatch):
    """Positive control: the checks see a bad import and a moved name in a planted module."""
    bad = PACKAGE / "results.py"
    source = bad.read_text() + "\n\ndef _planted():\n    from .compilation import build_module\n"
    source += '    return "sch.get_sblock"\n'
    planted = tmp_path / "mlc_jupyter" / "results.py"
    planted.parent.mkdir()
    planted.write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "mlc_jupyter")
    _tree.cache_clear()
    try:
        with pytest.raises(AssertionError, match="results \\(core\\) imports compilation"):
            test_imports_point_down_the_layers_and_services_use_only_what_they_declare()
        with pytest.raises(AssertionError, match="get_sblock"):
            test_no_version_specific_tvm_name_outside_the_boundary()
    finally:
        _tree.cache_clear()


#: Test folders that are not packages of mlc_jupyter: end-to-end paths a user takes.
CROSS_CUTTING_TEST_DIRS = {"browser", "course", "fuzz", "gpu"}


def test_the_test_tree_mirrors_the_package():
    tests = Path(__file__).resolve().parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    strays = sorted(
        folders - CROSS_CUTTING_TEST_DIRS - {u for u in UNITS if (PACKAGE / u).is_dir()}
    )
    assert not strays, (
        f"tests/{strays[0]}/ names no package of mlc_jupyter: tests of mlc_jupyter/<pkg>/<module>.py "
        f"go in tests/<pkg>/test_<module>.py (end-to-end folders: {sorted(CROSS_CUTTING_TEST_DIRS)} "
        f"in {HERE})"
    )
    names: dict[str, Path] = {}
    for path in sorted(tests.rglob("test_*.py")):
        other = names.setdefault(path.name, path)
        assert other == path, (
            f"{path.relative_to(tests)} and {other.relative_to(tests)} share a file name, which "
            "pytest cannot import twice: name one after its package (test_<pkg>_<module>.py)"
        )

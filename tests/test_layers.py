"""The layer contract and the TVM boundary (docs/DEVELOPING.md, "Layers"), checked on the source.

Every import in ``mlc_jupyter/`` (function-level ones included) must point down the layers
``magics -> widgets -> display -> services -> core``, a service may use only the services listed
for it, and only the boundary modules may name what TVM moved between releases. A new package
or top-level module fails here until it is classified in ``UNITS`` (one place). Inside the
package no module imports itself back through others, neither at import time nor through a
function-level import, and a function-level import says why it is deferred. Every check has a
planted violation at the end of this file that it must catch.
"""

from __future__ import annotations

import ast
import io
import itertools
import re
import shutil
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
    "caches": "service",  # what the cache folder holds, and clearing it (%mlc_cache)
    "cells": "service",
    "compilation": "service",
    "course": "service",  # the course shims ordinary cells reach in course mode
    "deploy": "service",  # builds out to PyTorch (module, torch.compile) and exported programs
    "graph": "service",
    "measure": "service",
    "models": "service",
    "passes": "service",
    "schedule": "service",
    "trace": "service",
    "tune": "service",
    "config": "core",
    "dialect": "core",
    "errata": "core",  # the printed book's known errata (course-mode messages, book notebooks)
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
    "course": {
        "cells",
        "compilation",
        "measure",
        "schedule",
        "tune",
    },  # cells: the loop-extent check
    "deploy": {"compilation", "models", "tune"},
    "models": {"compilation"},
    "passes": {"compilation", "graph", "schedule"},
    "tune": {"compilation", "measure"},
    "trace": {"compilation", "measure", "schedule", "tune"},
    "caches": {"compilation", "tune"},  # builds on disk and in memory, tuning work dirs
}

#: The package that may import TVM and name what moved between TVM releases (every file in it),
#: and the other modules that may: the dialect rules.
BOUNDARY_PACKAGE = "tvm_compat"
BOUNDARY = {"dialect.py"}
#: A file of the boundary stays about this short: one TVM subsystem each.
BOUNDARY_FILE_LINES = 300
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


#: Callables that import a module named by a string; outside the boundary the name must be one
#: of the package's own modules (relative, ``mlc_jupyter.``, or built on ``__name__``).
DYNAMIC_IMPORTS = {"import_module", "__import__", "find_spec"}
#: Marks a function-level import kept for a cost: ``# deferred: <why>`` on or above its line.
DEFERRED = re.compile(r"#\s*deferred:\s*\S")


def _module(path: Path) -> str:
    """The dotted name of ``path`` inside the package (``tune.records``; ``tune`` for its
    ``__init__``; ``__init__`` for the package's own)."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(parts) or "__init__"


def _import_statements(path: Path) -> list[tuple[ast.stmt, bool]]:
    """Every import statement of ``path``, with whether it runs inside a function."""
    found = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, deferred))
            inner = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, deferred or inner)

    visit(_tree(path), False)
    return found


def _package_edges(path: Path, modules: set[str]) -> list[tuple[int, str, bool]]:
    """``(line, module, deferred)`` for every import of a package module by ``path``.

    ``from .pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg``
    (its ``__init__``); a parent package an import runs first is no edge (Python resolves it).
    """
    package = list(path.relative_to(PACKAGE).with_suffix("").parts[:-1])
    edges = []
    for node, deferred in _import_statements(path):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = base + (node.module.split(".") if node.module else [])
            elif (node.module or "").split(".")[0] == "mlc_jupyter":
                target = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                sub = ".".join([*target, alias.name])
                dst = sub if sub in modules else ".".join(target) or "__init__"
                edges.append((node.lineno, dst, deferred))
        else:
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "mlc_jupyter":
                    edges.append((node.lineno, ".".join(parts[1:]) or "__init__", deferred))
    here = _module(path)
    for line, arg in _dynamic_import_names(path):
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            name = arg.value
            if name.startswith("mlc_jupyter."):
                edges.append((line, name.removeprefix("mlc_jupyter."), True))
            elif name.startswith(".") and here in modules:  # import_module(".x", __name__)
                edges.append((line, (here + name).removeprefix("__init__."), True))
    return edges


def import_cycles(*, with_deferred: bool) -> list[str]:
    """A readable path (module, file and line of each import) of each circle of imports found."""
    paths = {_module(p): p for p in _sources()}
    graph: dict[str, dict[str, int]] = {}
    for name, path in paths.items():
        graph[name] = {}
        for line, dst, deferred in _package_edges(path, set(paths)):
            if dst != name and dst in paths and (with_deferred or not deferred):
                graph[name].setdefault(dst, line)
    cycles: list[str] = []
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        stack, on_path = [(start, iter(sorted(graph[start])))], [start]
        while stack:
            node, todo = stack[-1]
            nxt = next(todo, None)
            if nxt is None:
                stack.pop()
                on_path.pop()
                done.add(node)
            elif nxt in on_path:
                loop = [*on_path[on_path.index(nxt) :], nxt]
                steps = (
                    f"{a} ({_where(paths[a], graph[a][b])})" for a, b in itertools.pairwise(loop)
                )
                cycles.append(" -> ".join(steps) + f" -> {nxt}")
            elif nxt not in done:
                stack.append((nxt, iter(sorted(graph[nxt]))))
                on_path.append(nxt)
    return cycles


def _dynamic_import_names(path: Path) -> list[tuple[int, ast.expr]]:
    """``(line, name argument)`` of every ``importlib.import_module(...)``-like call."""
    calls: list[tuple[int, ast.expr]] = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in DYNAMIC_IMPORTS:
                calls.append((node.lineno, node.args[0]))
    return sorted(calls, key=lambda call: (call[0], call[1].col_offset))


def _names_own_module(arg: ast.expr) -> bool:
    """Is this module name provably one of the package's own: relative, ``mlc_jupyter.``..., or
    built on ``__name__`` / ``__package__``?"""
    first = arg
    while isinstance(first, ast.BinOp | ast.JoinedStr | ast.FormattedValue):
        if isinstance(first, ast.BinOp):
            first = first.left
        elif isinstance(first, ast.JoinedStr):
            if not first.values:
                return False
            first = first.values[0]
        else:
            first = first.value
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        name = first.value
        return name.startswith(".") or name.split(".")[0] == "mlc_jupyter"
    return isinstance(first, ast.Name) and first.id in ("__name__", "__package__")


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


def _in_boundary(path: Path) -> bool:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] == BOUNDARY_PACKAGE or rel.as_posix() in BOUNDARY


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
        if not _in_boundary(path)
        for line, _, ext in _imports(path)
        if ext in ("tvm", "tvm_ffi")
    ]
    assert not wrong, (
        "TVM is imported only by mlc_jupyter/tvm_compat/; ask it for the module or name "
        "(add a small function there when none fits):\n" + "\n".join(wrong)
    )


def test_outside_the_boundary_modules_are_loaded_by_name_only_from_the_package():
    wrong = [
        f"{_where(path, line)}: {ast.unparse(arg)}"
        for path in _sources()
        if not _in_boundary(path)
        for line, arg in _dynamic_import_names(path)
        if not _names_own_module(arg)
    ]
    assert not wrong, (
        "a module loaded by a name (importlib.import_module, __import__, find_spec) outside "
        "mlc_jupyter/tvm_compat/ must be one of the package's own (relative, 'mlc_jupyter.', or "
        "built on __name__); TVM is loaded by the boundary: ask it for the module:\n"
        + "\n".join(wrong)
    )


def test_no_module_imports_itself_back_at_import_time():
    cycles = import_cycles(with_deferred=False)
    assert not cycles, (
        "modules that import each other at import time (Python runs one of them half-"
        "initialised); move what both need into a third module, or split the one that is two "
        "things:\n" + "\n".join(cycles)
    )


def test_no_function_level_import_closes_a_circle():
    cycles = import_cycles(with_deferred=True)
    assert not cycles, (
        "modules that import each other once function-level imports count (the deferred import "
        "hides the circle; it still means neither module can be understood alone); move what "
        "both need into a third module, or pass it in:\n" + "\n".join(cycles)
    )


def _says_why_deferred(lines: list[str], import_lines: set[int], node: ast.stmt) -> bool:
    """A ``# deferred: <why>`` comment on the import or above it (through the imports and
    comments right before it, so one comment can cover a group of deferred imports)."""
    if any(DEFERRED.search(lines[i - 1]) for i in range(node.lineno, node.end_lineno + 1)):
        return True
    i = node.lineno - 1
    while i >= 1 and (i in import_lines or lines[i - 1].lstrip().startswith("#")):
        if DEFERRED.search(lines[i - 1]):
            return True
        i -= 1
    return False


def test_every_function_level_import_says_why_it_is_deferred():
    wrong = []
    for path in _sources():
        lines = path.read_text().splitlines()
        imports = _import_statements(path)
        import_lines = {i for node, _ in imports for i in range(node.lineno, node.end_lineno + 1)}
        for node, deferred in imports:
            if not deferred:
                continue
            if _in_boundary(path) and {_absolute(name)[1] for name in _imported_modules(node)} <= {
                "tvm",
                "tvm_ffi",
            }:
                continue  # the boundary loads TVM on first use: its whole reason to exist
            if not _says_why_deferred(lines, import_lines, node):
                wrong.append(f"{_where(path, node.lineno)}: {lines[node.lineno - 1].strip()}")
    assert not wrong, (
        "function-level imports without a '# deferred: <why>' comment (docs/DEVELOPING.md, "
        '"Layers"): an import is deferred only when importing costs (TVM, torch, anywidget, '
        "the magics at %load_ext); move the others to the top of the module:\n" + "\n".join(wrong)
    )


def _imported_modules(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.ImportFrom):
        return ["." * node.level + (node.module or "")]
    return [alias.name for alias in node.names]


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
    wrong = [use for path in _sources() if not _in_boundary(path) for use in _moved_name_uses(path)]
    assert not wrong, (
        "names that moved between TVM releases belong in mlc_jupyter/tvm_compat/ (or the "
        "dialect rules); use or add a function or constant there, and reword docstrings:\n"
        + "\n".join(wrong)
    )


def test_each_boundary_file_is_short_and_has_a_contract_test():
    wrong = []
    for path in sorted((PACKAGE / BOUNDARY_PACKAGE).glob("*.py")):
        lines = len(path.read_text().splitlines())
        if lines > BOUNDARY_FILE_LINES:
            wrong.append(f"{_where(path, lines)}: {lines} lines; split it by TVM subsystem")
        test = f"tests/{BOUNDARY_PACKAGE}/test_{path.stem}.py"
        if path.stem != "__init__" and not (TESTS.parent / test).exists():
            wrong.append(f"mlc_jupyter/{BOUNDARY_PACKAGE}/{path.name} has no contract test {test}")
    assert not wrong, (
        f"each file of mlc_jupyter/{BOUNDARY_PACKAGE}/ is one TVM subsystem (at most about "
        f"{BOUNDARY_FILE_LINES} lines) with a contract test that fails first when TVM changes "
        "what it relies on:\n" + "\n".join(wrong)
    )


def _magic_families() -> set[str]:
    """The magic families: the modules ``MAGIC_MODULES`` in ``magics/__init__.py`` names."""
    for node in ast.walk(_tree(PACKAGE / "magics" / "__init__.py")):
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", "") == "MAGIC_MODULES" for t in targets):
                return set(ast.literal_eval(node.value))
    raise AssertionError("magics/__init__.py no longer defines MAGIC_MODULES")


def test_no_magic_family_imports_another():
    families = _magic_families()
    modules = {_module(p) for p in _sources()}
    wrong = [
        f"{_where(path, line)}: magics.{path.stem} imports {dst}"
        for path in _sources()
        if path.parent == PACKAGE / "magics" and path.stem in families
        for line, dst, _ in _package_edges(path, modules)
        if dst.startswith("magics.") and dst.split(".")[1] in families - {path.stem}
    ]
    assert not wrong, (
        "a magic module imports another magic family (MAGIC_MODULES); what both need is a "
        "helper: a module of magics/ that registers no magic (progress.py, course_state.py, "
        "lookup.py), or a service:\n" + "\n".join(wrong)
    )


#: The one table of rich output (type -> HTML and text), registered once at ``%load_ext``.
FORMATTER_TABLE = "display/formatters.py"
#: IPython's ways to register a formatter, and the object that holds them.
FORMATTER_REGISTRATION = {"for_type", "for_type_by_name", "display_formatter"}


def _formatter_registrations(path: Path) -> list[str]:
    return [
        f"{_where(path, node.lineno)}: .{node.attr}"
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Attribute) and node.attr in FORMATTER_REGISTRATION
    ]


def test_formatters_are_registered_from_one_table():
    wrong = [
        use
        for path in _sources()
        if path.relative_to(PACKAGE).as_posix() != FORMATTER_TABLE
        for use in _formatter_registrations(path)
    ]
    assert not wrong, (
        f"a display formatter registered outside mlc_jupyter/{FORMATTER_TABLE}: give the type "
        "its row in formatter_table() there (registered once at %load_ext, so it renders "
        "whichever magic made it):\n" + "\n".join(wrong)
    )


#: The one module that asks what a target is (``is_cpu``, ``is_cuda``, ``is_gpu_target``,
#: ``device_kind``); elsewhere a target's kind is never compared by hand.
TARGET_MODULE = "compilation/targets.py"
#: TVM's target kinds (and the aliases the parser takes), as written in a comparison.
TARGET_KINDS = {
    "llvm", "c", "cuda", "rocm", "vulkan", "metal", "opencl", "webgpu", "nvptx", "hexagon",
}  # fmt: skip


def _is_kind_expression(node: ast.AST, tainted: set[str]) -> bool:
    """``x.kind.name``, ``str(x.kind.name)``, ``target_kind(x)``, ``getattr(getattr(x, "kind"),
    "name")``, or a name given one of these (``tainted``) or called ``target_kind``."""
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "target_kind":
            return True
        if name == "str" and node.args:
            return _is_kind_expression(node.args[0], tainted)
        if name == "getattr" and len(node.args) >= 2:
            inner, attr = node.args[0], node.args[1]
            named = isinstance(attr, ast.Constant) and attr.value == "name"
            return named and "kind" in ast.unparse(inner)
        return False
    if isinstance(node, ast.Attribute):
        return (
            node.attr == "name"
            and isinstance(node.value, ast.Attribute)
            and (node.value.attr == "kind")
        )
    return isinstance(node, ast.Name) and (node.id in tainted or node.id == "target_kind")


def _names_kinds(node: ast.AST) -> bool:
    values = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return any(isinstance(v, ast.Constant) and v.value in TARGET_KINDS for v in values)


def _raw_kind_comparisons(path: Path) -> list[str]:
    """Where ``path`` compares a target's kind with a kind's name by hand."""
    tree = _tree(path)
    tainted = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_kind_expression(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        kinds = any(_is_kind_expression(o, tainted) for o in operands)
        if kinds and any(map(_names_kinds, operands)):
            found.append(f"{_where(path, node.lineno)}: {ast.unparse(node)}")
    return found


def test_a_target_is_asked_one_way():
    wrong = [
        use
        for path in _sources()
        if path.relative_to(PACKAGE).as_posix() != TARGET_MODULE
        for use in _raw_kind_comparisons(path)
    ]
    assert not wrong, (
        "a target's kind compared by hand; ask mlc_jupyter/compilation/targets.py: is_cpu(t), "
        "is_cuda(t), is_gpu_target(t) (the one definition of a GPU) or device_kind(t):\n"
        + "\n".join(wrong)
    )


#: The one module of ``tune/`` that turns a budget's seconds into a deadline and asks the clock
#: whether time is up (its ``Deadline``); every other module of ``tune/`` asks that object.
DEADLINE_MODULE = "tune/budget.py"
#: Clock readings: ``perf_counter()``, ``time.time()``, ``time.monotonic()`` ...
CLOCKS = {"perf_counter", "time", "monotonic", "perf_counter_ns", "monotonic_ns", "time_ns"}


def _is_clock(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id in CLOCKS) or (
        isinstance(func, ast.Attribute)
        and func.attr in CLOCKS
        and isinstance(func.value, ast.Name)
        and func.value.id == "time"
    )


def _is_budget_seconds(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "time_s"


def _second_deadlines(path: Path) -> list[str]:
    """Where ``path`` keeps a clock of its own: a deadline made from the clock (``now + s``),
    time left read from it (``deadline - now``), the clock compared with a moment, or a budget's
    seconds counted (``budget.time_s - elapsed``). Elapsed time (``now - start``) is no deadline."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.BinOp):
            operands = (node.left, node.right)
            if isinstance(node.op, ast.Add) and any(map(_is_clock, operands)):
                found.append((node.lineno, "a deadline made from the clock"))
            elif isinstance(node.op, ast.Sub) and _is_clock(node.right):
                found.append((node.lineno, "time left read from the clock"))
            elif any(map(_is_budget_seconds, operands)):
                found.append((node.lineno, "a budget's seconds counted down"))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(map(_is_clock, operands)):
                found.append((node.lineno, "the clock compared with a moment"))
            elif any(map(_is_budget_seconds, operands)) and not all(
                isinstance(op, ast.Is | ast.IsNot) for op in node.ops
            ):
                found.append((node.lineno, "a budget's seconds compared"))
    return [f"{_where(path, line)}: {what}" for line, what in sorted(set(found))]


def test_tune_has_one_clock_that_says_time_is_up():
    wrong = [
        use
        for path in _sources()
        if path.relative_to(PACKAGE).parts[0] == "tune"
        and path.relative_to(PACKAGE).as_posix() != DEADLINE_MODULE
        for use in _second_deadlines(path)
    ]
    assert not wrong, (
        f"a second clock in tune/: a run's time is one Deadline (mlc_jupyter/{DEADLINE_MODULE}), "
        "made once from the budget (Budget.start()) and passed down; ask it (left_s(), "
        "passed(), a slot with within(seconds)) instead of the clock:\n" + "\n".join(wrong)
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


#: A copy of the package with one planted violation per check, and the message each check must
#: give for it (the positive controls: a check that cannot fail proves nothing).
PLANTS = {
    "planted_unit.py": '"""Classified nowhere."""\n',
    "graph/planted_front_end.py": "import IPython\n",
    "graph/planted_tvm.py": "import tvm\n",
    "graph/planted_by_name.py": (
        "import importlib\n\n\n"
        "def load():\n"
        '    return importlib.import_module("tvm.s_tir.tensor_intrin"), __import__("tvm")\n'
    ),
    "cells/planted_a.py": "from .planted_b import B\n\nA = 1\n",
    "cells/planted_b.py": "from .planted_a import A\n\nB = 1\n",
    "schedule/planted_c.py": "from .planted_d import D\n\nC = 1\n",
    "schedule/planted_d.py": (
        "def d():\n"
        "    # deferred: planted, a reason that does not make the circle right\n"
        "    from .planted_c import C\n\n"
        "    return C\n\n\nD = 1\n"
    ),
    "tvm_compat/planted_subsystem.py": '"""A boundary file without a contract test."""\n',
    "tune/search/planted_clock.py": (
        "import time\n\n\n"
        "def out_of_time(budget, start):\n"
        "    deadline = time.perf_counter() + budget.time_s\n"
        "    return budget.time_s - (time.perf_counter() - start) <= 0 or deadline < 0\n"
    ),
    "tune/planted_kind.py": (
        "def gpu(target):\n"
        "    kind = str(target.kind.name)\n"
        '    return kind != "llvm" or target.kind.name in ("cuda", "rocm")\n'
    ),
    "display/planted_formatter.py": (
        "def register(ipython):\n"
        "    html = ipython.display_formatter.formatters['text/html']\n"
        "    html.for_type(int, str)\n"
    ),
    "magics/planted_magic.py": "from .tune import TuneMagics\nfrom .progress import QUIET_S\n",
    "measure/planted_deferred.py": (
        "def said():\n    import json  # deferred: planted, with its reason\n\n    return json\n\n\n"
        "def unsaid():\n    import csv\n\n    return csv\n"
    ),
}
APPENDED_TO_RESULTS = (
    "\n\ndef _planted():\n"
    "    from .compilation import build_module  # deferred: planted\n\n"
    '    return build_module, "sch.get_sblock"\n'
)
CAUGHT = [
    (test_every_package_and_module_is_classified_in_one_place, r"mlc_jupyter/planted_unit\b"),
    (
        test_imports_point_down_the_layers_and_services_use_only_what_they_declare,
        r"results\.py:\d+: results \(core\) imports compilation",
    ),
    (test_the_services_form_no_cycle, r"cycle: (\w+ -> )*measure -> tune -> measure"),
    (
        test_core_and_services_import_no_notebook_front_end,
        r"planted_front_end\.py:1: graph imports IPython",
    ),
    (test_only_the_boundary_imports_tvm, r"planted_tvm\.py:1: imports tvm"),
    (
        test_outside_the_boundary_modules_are_loaded_by_name_only_from_the_package,
        r"planted_by_name\.py:5: 'tvm\.s_tir\.tensor_intrin'\n.*planted_by_name\.py:5: 'tvm'",
    ),
    (
        test_no_module_imports_itself_back_at_import_time,
        r"cells\.planted_a \(mlc_jupyter/cells/planted_a\.py:1\) -> cells\.planted_b "
        r"\(mlc_jupyter/cells/planted_b\.py:1\) -> cells\.planted_a",
    ),
    (
        test_no_function_level_import_closes_a_circle,
        r"schedule\.planted_c \(mlc_jupyter/schedule/planted_c\.py:1\) -> schedule\.planted_d "
        r"\(mlc_jupyter/schedule/planted_d\.py:3\) -> schedule\.planted_c",
    ),
    (
        test_every_function_level_import_says_why_it_is_deferred,
        r"planted_deferred\.py:8: import csv",
    ),
    (test_no_version_specific_tvm_name_outside_the_boundary, r"results\.py:\d+: get_sblock"),
    (
        test_no_magic_family_imports_another,
        r"planted_magic\.py:1: magics\.planted_magic imports magics\.tune\n",
    ),
    (
        test_formatters_are_registered_from_one_table,
        r"planted_formatter\.py:2: \.display_formatter.*planted_formatter\.py:3: \.for_type",
    ),
    (
        test_a_target_is_asked_one_way,
        r"planted_kind\.py:3: kind != 'llvm'.*planted_kind\.py:3: target\.kind\.name in",
    ),
    (
        test_tune_has_one_clock_that_says_time_is_up,
        r"planted_clock\.py:5: a deadline made from the clock.*"
        r"planted_clock\.py:6: a budget's seconds counted down",
    ),
    (
        test_each_boundary_file_is_short_and_has_a_contract_test,
        r"tvm_compat/planted_subsystem\.py has no contract test",
    ),
]


@pytest.fixture(scope="module")
def planted_package(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("planted") / "mlc_jupyter"
    shutil.copytree(PACKAGE, root, ignore=shutil.ignore_patterns(*SKIP_DIRS))
    for rel, text in PLANTS.items():
        (root / rel).write_text(text)
    with (root / "results.py").open("a") as results:
        results.write(APPENDED_TO_RESULTS)
    magics = root / "magics" / "__init__.py"  # the planted magic is a family of its own
    magics.write_text(magics.read_text().replace('"export",', '"export", "planted_magic",'))
    return root


@pytest.mark.parametrize(("check", "message"), CAUGHT, ids=[c.__name__ for c, _ in CAUGHT])
def test_each_check_catches_its_planted_violation(check, message, planted_package, monkeypatch):
    """Positive control: every check above fails, naming the place, on a planted violation."""
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", planted_package)
    monkeypatch.setitem(SERVICE_USES, "measure", {*SERVICE_USES["measure"], "tune"})
    with pytest.raises(AssertionError, match=re.compile(message, re.S)) as caught:
        check()
    assert "planted_unit" not in str(caught.value) or "planted_unit" in message


def test_the_circle_checks_tell_import_time_from_function_level(planted_package, monkeypatch):
    """The deferred circle is not an import-time one, and a deferred import with a reason passes."""
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", planted_package)
    import_time = " ".join(import_cycles(with_deferred=False))
    assert "planted_a" in import_time and "planted_c" not in import_time
    with pytest.raises(AssertionError) as caught:
        test_every_function_level_import_says_why_it_is_deferred()
    assert "planted_deferred.py:2" not in str(caught.value)
    assert "planted_d.py" not in str(caught.value)


@pytest.mark.parametrize(
    ("name", "ours"),
    [
        ('f"{__name__}.{sub}"', True),
        ('__name__ + "." + sub', True),
        ('".widgets"', True),
        ('"mlc_jupyter.tune"', True),
        ('"mlc_jupyter_extra"', False),
        ('"tvm" + sub', False),
        ('f"tvm.{sub}"', False),
        ("TENSOR_INTRIN", False),
    ],
)
def test_a_module_name_is_ours_only_when_provably_so(name, ours):
    assert _names_own_module(ast.parse(name, mode="eval").body) is ours


#: Test folders that are not packages of mlc_jupyter: end-to-end paths a user takes.
CROSS_CUTTING_TEST_DIRS = {"browser", "course", "fuzz", "gpu"}


#: The test tree (a planted one in the positive control below).
TESTS = Path(__file__).resolve().parent


def test_the_test_tree_mirrors_the_package():
    tests = TESTS
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    strays = sorted(
        folders - CROSS_CUTTING_TEST_DIRS - {u for u in UNITS if (PACKAGE / u).is_dir()}
    )
    assert not strays, (
        f"tests/{strays[0]}/ names no package of mlc_jupyter: tests of mlc_jupyter/<pkg>/<module>.py "
        f"go in tests/<pkg>/test_<module>.py (end-to-end folders: {sorted(CROSS_CUTTING_TEST_DIRS)} "
        f"in {HERE})"
    )
    for folder in sorted(tests.glob("*/**/")):
        rel = folder.relative_to(tests)
        if rel.parts[0] in CROSS_CUTTING_TEST_DIRS or len(rel.parts) < 2:
            continue
        if folder.name.startswith((".", "_")) or not any(folder.glob("test_*.py")):
            continue
        assert (PACKAGE / rel / "__init__.py").exists(), (
            f"tests/{rel.as_posix()}/ names no subpackage of mlc_jupyter: tests of "
            f"mlc_jupyter/<pkg>/<sub>/<module>.py go in tests/<pkg>/<sub>/test_<module>.py"
        )
    names: dict[str, Path] = {}
    for path in sorted(tests.rglob("test_*.py")):
        other = names.setdefault(path.name, path)
        assert other == path, (
            f"{path.relative_to(tests)} and {other.relative_to(tests)} share a file name, which "
            "pytest cannot import twice: name one after its package (test_<pkg>_<module>.py)"
        )


@pytest.mark.parametrize(
    ("planted", "message"),
    [
        (["notapackage/test_x.py"], r"tests/notapackage/ names no package"),
        (["tune/test_records.py", "measure/test_records.py"], r"share a file name"),
        (["tune/gone/test_x.py"], r"tests/tune/gone/ names no subpackage"),
    ],
)
def test_the_mirror_check_catches_a_planted_stray(planted, message, tmp_path, monkeypatch):
    """Positive control: a test folder no package has (at the top or below), and one test file
    name used twice."""
    for rel in planted:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    monkeypatch.setattr(sys.modules[__name__], "TESTS", tmp_path)
    with pytest.raises(AssertionError, match=message):
        test_the_test_tree_mirrors_the_package()

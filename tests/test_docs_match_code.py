"""Drift tests: what the README, the packaging and the lab extension say matches the code.

Each failure says exactly what to add or change, so a new magic, dialect rule or cell error is
one copy-paste away from green.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import mlc_jupyter
from mlc_jupyter import errors
from mlc_jupyter.dialect import table_markdown

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
HELPERS_TS = REPO / "labextension" / "src" / "helpers.ts"


def _magic_table_rows() -> list[str]:
    """The first cells of the README's magic table (``| magic | what it does |``)."""
    start = README.index("| magic | what it does |")
    rows = []
    for line in README[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip().strip("`"))
    return rows


def test_the_version_has_one_source():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project.get("dynamic", []), (
        "pyproject.toml must not carry a version: it reads mlc_jupyter/__init__.py's __version__ "
        '(dynamic = ["version"], [tool.hatch.version] path = "mlc_jupyter/__init__.py")'
    )
    package = json.loads((REPO / "labextension" / "package.json").read_text())
    assert package["version"] == mlc_jupyter.__version__, (
        f"labextension/package.json says {package['version']}; npm needs its own copy, set it "
        f"to mlc_jupyter.__version__ ({mlc_jupyter.__version__})"
    )


def test_every_registered_magic_has_a_row_in_the_readme_magic_table(shell):
    magics = shell.magics_manager.magics
    ours = {
        prefix + name
        for kind, prefix in (("line", "%"), ("cell", "%%"))
        for name, func in magics[kind].items()
        if getattr(func, "__module__", "").startswith("mlc_jupyter.")
        or getattr(getattr(func, "__self__", None), "__module__", "").startswith("mlc_jupyter.")
    }
    assert {"%%tir", "%mlc_build"} <= ours  # the lookup itself works
    documented = {row.split()[0] for row in _magic_table_rows()}
    missing = sorted(ours - documented)
    assert not missing, (
        "README.md's magic table (section 'In a notebook') has no row for "
        + ", ".join(missing)
        + ": add '| `%name ARGS` | what it does |' for each"
    )
    stale = sorted(documented - ours)
    assert not stale, f"README.md's magic table lists magics that do not exist: {stale}"


def test_the_readme_translation_table_is_the_dialects():
    table = table_markdown()
    missing = [row for row in table.splitlines() if row not in README]
    assert not missing, (
        "README.md's translation table (section 'The course's spelling on TVM 0.27') differs "
        "from mlc_jupyter/dialect.py's RULES; replace it with the output of "
        "`python -m mlc_jupyter.dialect`. Rows missing or changed:\n" + "\n".join(missing)
    )


def test_the_lab_extension_marks_exactly_the_cell_errors_errors_py_defines():
    text = HELPERS_TS.read_text()
    block = re.search(r"DIAGNOSTIC_ENAMES = new Set\(\[(.*?)\]\)", text, re.S)
    assert block, f"{HELPERS_TS} no longer defines DIAGNOSTIC_ENAMES"
    read = set(re.findall(r"'(\w+)'", block.group(1)))

    def subclasses(cls: type) -> set[type]:
        return {cls} | {s for sub in cls.__subclasses__() for s in subclasses(sub)}

    located = {c.__name__ for c in subclasses(errors.CellError) if c.__module__ == errors.__name__}
    assert located - read == set(), (
        f"cell errors the lab extension does not mark: {sorted(located - read)}; add them to "
        "DIAGNOSTIC_ENAMES in labextension/src/helpers.ts and rebuild the extension"
    )
    assert read - located == set(), (
        f"labextension/src/helpers.ts reads enames errors.py has no CellError for: "
        f"{sorted(read - located)}"
    )


DEVELOPING = REPO / "docs" / "DEVELOPING.md"
#: A file or folder named in backticks: ``tune/kernel.py``, ``bench/results/``, ``stepper.js``.
_NAMED_PATH = re.compile(r"`([\w./<>*-]+?(?:\.(?:py|js|css|ts|md|toml|json|ipynb)|/))`")
#: A layout table row whose first cell is a folder: bare file names in it live there.
_FOLDER_ROW = re.compile(r"^\| `([\w./-]+/)` \|")


def _missing_paths(text: str) -> list[str]:
    """``line N: path`` for each path ``text`` names that is not in the repository.

    A bare name in a layout row is looked up in the row's folder; any other path from the
    repository root, ``mlc_jupyter/`` or ``tests/`` (in a layout row, also from the row's folder). Patterns (``test_<module>.py``) and
    generated folders the repository ignores (``.gitignore``) are not paths to check.
    """
    ignored = set((REPO / ".gitignore").read_text().split())
    missing = []
    for number, line in enumerate(text.splitlines(), 1):
        row = _FOLDER_ROW.match(line)
        for name in _NAMED_PATH.findall(line):
            if "<" in name or "*" in name or name in ignored:
                continue
            if row and name != row.group(1) and "/" not in name.rstrip("/"):
                bases = [REPO / row.group(1)]
            else:
                bases = [REPO, REPO / "mlc_jupyter", REPO / "tests"]
                bases += [REPO / row.group(1)] if row else []  # a subfolder's file: `search/x.py`
            inside = not name.startswith(("../", "/"))
            if not (inside and any((base / name).exists() for base in bases)):
                where = "outside the repository" if not inside else "no such file"
                missing.append(f"line {number}: {name} ({where})")
    return missing


def test_every_path_developing_md_names_exists():
    missing = _missing_paths(DEVELOPING.read_text())
    assert not missing, (
        "docs/DEVELOPING.md names paths that are not in the repository (renamed, moved or never "
        "there); write the path as it is now, or cite nothing outside the repo:\n"
        + "\n".join(missing)
    )


def test_the_path_check_catches_a_planted_stale_path():
    """Positive control: a moved module, a file outside the repo and a bare name in a row."""
    planted = (
        "See `../shared/design/architecture.md` and `tune/driver.py`.\n"
        "| `mlc_jupyter/tune/` | the driver (`driver.py`), the budget (`budget.py`), "
        "the runner (`search/runner.py`, not `search/driver.py`) | |\n"
        "Patterns such as `tests/<package>/test_<module>.py` and `test-output/` are not paths.\n"
    )
    assert _missing_paths(planted) == [
        "line 1: ../shared/design/architecture.md (outside the repository)",
        "line 1: tune/driver.py (no such file)",
        "line 2: driver.py (no such file)",
        "line 2: search/driver.py (no such file)",
    ]


def _layout_row(folder: str, text: str) -> str:
    """The layout table's row of ``folder`` (``mlc_jupyter/magics/``)."""
    start = text.index(f"| `{folder}` |")
    return text[start : text.index("\n", start)]


def developing_magic_modules(text: str) -> set[str]:
    """The magic families the magics row of DEVELOPING's layout table lists: ``(`cells`: ...;
    `build`: ...)``, the names before the row says what each has."""
    row = _layout_row("mlc_jupyter/magics/", text)
    families = row[row.index("one module per magic family (") : row.index("each has `register")]
    return set(re.findall(r"`([a-z_]+)`", families))


def test_developing_lists_every_magic_module():
    from mlc_jupyter.magics import MAGIC_MODULES

    listed = developing_magic_modules(DEVELOPING.read_text())
    assert listed == set(MAGIC_MODULES), (
        "docs/DEVELOPING.md's magics row ('one module per magic family (...)') and MAGIC_MODULES "
        f"differ: missing {sorted(set(MAGIC_MODULES) - listed)}, not magic modules "
        f"{sorted(listed - set(MAGIC_MODULES))}; add '`name`: %magic' for each"
    )


def test_the_magic_list_check_catches_a_planted_omission():
    """Positive control: a row that leaves out ``machine`` and names a module that is none."""
    row = (
        "| `mlc_jupyter/magics/` | one module per magic family (`cells`: `%%tir`; `gone`: x); "
        "each has `register(ipython)` | |\n"
    )
    assert developing_magic_modules(row) == {"cells", "gone"}


TESTS = REPO / "tests"


def rule_gaps(text: str, tests: Path = TESTS) -> list[str]:
    """What DEVELOPING's test-file rule leaves out: top-level test files that test no top-level
    module and are not named as whole-package checks, test folders that mirror no package and
    are not named as end-to-end folders (and names in the rule that are neither)."""
    start = text.index("- Tests mirror the package:")
    rule = text[start : text.index("\n- ", start + 1)]
    named = set(re.findall(r"`(test_\w+\.py)`", rule))
    folders = set(re.findall(r"`tests/(\w+)/`", rule))
    gaps = []
    for path in sorted(tests.glob("test_*.py")):
        module = REPO / "mlc_jupyter" / f"{path.name.removeprefix('test_')}"
        if not module.exists() and path.name not in named:
            gaps.append(
                f"tests/{path.name}: tests no top-level module and the rule does not name it"
            )
    for name in sorted(named - {p.name for p in tests.glob("test_*.py")}):
        gaps.append(f"tests/{name}: named by the rule, not in the tree")
    for path in sorted(
        p for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
    ):
        if not (REPO / "mlc_jupyter" / path.name).is_dir() and path.name not in folders:
            gaps.append(
                f"tests/{path.name}/: mirrors no package and is no end-to-end folder the rule names"
            )
    return gaps


def test_developing_s_test_file_rule_matches_the_tree():
    gaps = rule_gaps(DEVELOPING.read_text())
    assert not gaps, (
        "docs/DEVELOPING.md's rule 'Tests mirror the package' and tests/ differ; name the file or "
        "folder in the rule (a whole-package check, an end-to-end folder) or move it:\n"
        + "\n".join(gaps)
    )


def test_the_test_file_rule_check_catches_a_planted_stray(tmp_path):
    """Positive control: a top-level test of nothing, and an unnamed end-to-end folder."""
    (tmp_path / "test_layers.py").write_text("")
    (tmp_path / "test_errors.py").write_text("")  # tests mlc_jupyter/errors.py
    (tmp_path / "test_everything.py").write_text("")
    (tmp_path / "cells").mkdir()
    (tmp_path / "soak").mkdir()
    rule = "- Tests mirror the package: checks `test_layers.py`, `test_gone.py`; `tests/gpu/`.\n- x"
    assert rule_gaps(rule, tmp_path) == [
        "tests/test_everything.py: tests no top-level module and the rule does not name it",
        "tests/test_gone.py: named by the rule, not in the tree",
        "tests/soak/: mirrors no package and is no end-to-end folder the rule names",
    ]

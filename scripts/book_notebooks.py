"""Generate one notebook per chapter of the English MLC book, holding every code cell verbatim.

Usage: ``python scripts/book_notebooks.py [--book PATH] [--out notebooks/book] [--check]``

The book (``../shared/course/003_0efb66a8e9a300ba.txt``, a text extraction of the PDF) puts code
cells, their printed outputs and the listings it only shows in the same ``````` fences. Which is
which is the book's own markup (its sources mark runnable cells ``{.python .input}`` and listings
``python``): :data:`KINDS` records it, one letter per fence, and the script stops if the book's
fences no longer line up with it. The PDF extraction also broke the text's layout, and only the
layout is repaired (:func:`repair`): a cell split by a page break is joined again and its lost
indentation restored, and a line the PDF wrapped (``↪``, ``→``, a trailing ``_``) is joined.
Nothing else changes in a code cell, except cells that download data (FashionMNIST, the MLP
weights), which are replaced by a marked cell that makes arrays of the same shapes and dtypes.
What the book's cells printed is kept as text, long outputs folded; MetaSchedule's logs it copied
(chapter 4's tuning) become one folded block per cell, one line per log line (:func:`log_lines`).

Cells the book runs to show an error, exercises left to the reader and cells that need a GPU are
tagged ``raises-exception`` (nbclient then runs on) with the reason in ``metadata.mlc_book``.
``--check`` exits 1 when the notebooks in ``--out`` differ from what the book gives.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import operator
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from mlc_jupyter.errata import BOOK_ERRATA  # noqa: E402 - the checkout's package, found above

#: The book, in the ``shared/`` folder beside the checkout (or beside the worktrees' folder).
BOOK = next(
    (
        p / "shared" / "course" / "003_0efb66a8e9a300ba.txt"
        for p in (REPO.parent, REPO.parent.parent)
        if (p / "shared" / "course" / "003_0efb66a8e9a300ba.txt").is_file()
    ),
    REPO.parent / "shared" / "course" / "003_0efb66a8e9a300ba.txt",
)
OUT = REPO / "notebooks" / "book"

#: (notebook, title, first line, heading of the next chapter) in the book's text.
CHAPTERS = (
    ("ch2_tensor_program", "2 | Tensor Program Abstraction", "3 | End to End Model Execution"),
    ("ch3_end_to_end", "3 | End to End Model Execution", "4 | Automatic Program Optimization"),
    ("ch4_auto_optimization", "4 | Automatic Program Optimization",
     "5 | Integration with Machine Learning Frameworks"),
    ("ch5_integration", "5 | Integration with Machine Learning Frameworks",
     "6 | GPU and Hardware Acceleration"),
    ("ch6_1_gpu", "6 | GPU and Hardware Acceleration", "6.2 Part 2"),
    ("ch6_2_hardware", "6.2 Part 2", "7 | Computational Graph Optimization"),
    ("ch7_graph_optimization", "7 | Computational Graph Optimization", None),
)  # fmt: skip

#: One letter per fence of each chapter, after page-break halves are joined (the book's sources
#: mark runnable cells ``{.python .input}``; listings, outputs and exercise templates are not run):
#: c = code cell, o = printed output, m = a listing the book shows but does not run, s = a shell
#: command for the reader, x = an exercise template left to the reader (TODOs),
#: d = a cell that downloads data (replaced, see :data:`SUBSTITUTES`), e = a listing the book
#: prints to show an error: kept as a code cell that must fail (see :data:`EXPECTED_ERRORS`).
KINDS = {
    "ch2_tensor_program": (
        "mmscccccmmmmmmeemmcmcococccccccccccccocccocccocmccccococccoxccoxccxcxxx"
    ),
    "ch3_end_to_end": ("cdocdccoccmmmcmmcmmccoccccocmcccccc"),
    "ch4_auto_optimization": (
        "cccccocccococcmmccococococccoccoccoccoooooooooooocccocoooooococcdocodccccococcooooooccoco"
    ),
    "ch5_integration": ("cccccococcccccccccccomcocommmmmccocccdocdccccccoc"),
    "ch6_1_gpu": ("sccccccccccccccccc"),
    "ch6_2_hardware": ("cccccmccccccccccc"),
    "ch7_graph_optimization": ("ccccococococmcoccococcdcccccdcc"),
}


@dataclass
class Fence:
    """A fenced block of the book: its first line number and text, joined across page breaks."""

    line: int
    parts: list[list[str]]
    prose_before: str
    kind: str = ""
    text: str = ""
    repairs: list[str] = field(default_factory=list)


def read_fences(lines: list[str], start: int, end: int) -> list[Fence]:
    """The fences between line indexes ``start`` and ``end``, page-break halves joined."""
    fences: list[Fence] = []
    i, prose_start = start, start
    while i < end:
        if not lines[i].startswith("```"):
            i += 1
            continue
        j = i + 1
        while not lines[j].startswith("```"):
            j += 1
        prose = "\n".join(lines[prose_start:i])
        body = lines[i + 1 : j]
        continued = bool(fences) and (
            prose.strip() == _CONTINUES or fences[-1].parts[-1][-1:] == ["<continues>"]
        )
        if body and body[-1].strip() == _CONTINUES:  # the marker inside the fence
            body = [*body[:-1], "<continues>"]
        if continued:
            fences[-1].parts[-1] = [x for x in fences[-1].parts[-1] if x != "<continues>"]
            fences[-1].parts.append(body)
        else:
            fences.append(Fence(i + 1, [body], prose))
        i = prose_start = j + 1
    return fences


_CONTINUES = "(continues on next page)"
#: A line the PDF wrapped: the rest starts with one of these marks on the next line.
_WRAP_MARK = re.compile(r"^\s*(?:↪|˓→|→|←|↵|↴|\$\\hookrightarrow\$)\s?")
#: A wrapped line may end with a visible-space mark ``_`` (after punctuation) or ``↴``.
_WRAP_END = re.compile(r"(?<=[,(=+\-*/\[\s\"'])_$|\s*↴$")


def _unwrap(lines: list[str]) -> list[str]:
    """Join the lines the PDF wrapped; drop blank lines at both ends."""
    out: list[str] = []
    for line in lines:
        if out and _WRAP_MARK.match(line):
            rest = _WRAP_MARK.sub("", line, count=1)
            head = _WRAP_END.sub(" ", out[-1]) if _WRAP_END.search(out[-1]) else out[-1]
            out[-1] = head.rstrip() + (" " if head.endswith(" ") else "") + rest.lstrip()
        else:
            out.append(line.rstrip())
    out = [x.replace(" ↴", " ").replace("↴", "") for x in out]  # a wrap mark left mid-line
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _groups(lines: list[str]) -> list[list[str]]:
    groups: list[list[str]] = [[]]
    for line in lines:
        if not line.strip() and groups[-1]:
            groups.append([])
        groups[-1].append(line)
    return [g for g in groups if g]


def _candidates(previous: list[str]) -> list[int]:
    """Indentations to try for text that follows ``previous``: continue its block first."""
    code = [x for x in previous if x.strip() and not x.strip().startswith("#")]
    last = code[-1] if code else ""
    here = _indent(last)
    first = [here + 4] if last.rstrip().endswith(":") else [here]
    return list(dict.fromkeys([*first, *range(here, -1, -4), *range(here + 4, 25, 4)]))


def join_pages(parts: list[list[str]], indents: list[int] | None = None) -> tuple[str, bool]:
    """Join page-break halves; restore the indentation the PDF dropped from each half.

    Each blank-line separated group of a later half is shifted by the indentation that makes the
    whole parse, trying "continue the previous block" first for the group that continues the page
    and "top level" first for the groups after it; ``indents`` gives the shifts
    instead (one per group of the later halves) where the book's layout is not recoverable.
    Returns the text and whether it parses.
    """
    lines = _unwrap(parts[0])
    given = list(indents or [])
    for part in parts[1:]:
        part = _unwrap(part)
        base = min((_indent(x) for x in part if x.strip()), default=0)
        part = [x[base:] if x.strip() else "" for x in part]
        for number, group in enumerate(_groups(part)):
            # a later group (after a blank line) most often starts a new top-level statement
            tried = _candidates(lines) if number == 0 else list(range(0, 25, 4))
            shifts = [given.pop(0)] if given else tried
            chosen = shifts[0]
            for shift in shifts:
                trial = [*lines, *[" " * shift + x if x.strip() else "" for x in group]]
                if _parses(_close("\n".join(trial))):
                    chosen = shift
                    break
            lines += [" " * chosen + x if x.strip() else "" for x in group]
    text = "\n".join(lines)
    return text, _parses(text)


def _close(text: str) -> str:
    """``text`` with a body added after a trailing ``:`` line, to test a prefix for syntax."""
    last = [x for x in text.splitlines() if x.strip()]
    if last and last[-1].rstrip().endswith(":"):
        return text + "\n" + " " * (_indent(last[-1]) + 4) + "pass"
    return text


_FASHION_MNIST = """# mlc-book: SUBSTITUTED. The book downloads FashionMNIST with torchvision here; without network
# (and torchvision) this cell makes the same arrays: a 1x28x28 float32 image in [0, 1) and its label.
import numpy as np
import torch

class_names = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
               'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot']
img = np.random.default_rng(0).random((1, 28, 28), dtype=np.float32)
label = np.array([7])"""

_MLP_WEIGHTS = """# mlc-book: SUBSTITUTED. The book downloads the trained MLP weights with wget here; this cell writes
# fashionmnist_mlp_params.pkl with random float32 weights of the same shapes (so the predicted
# class is not the book's; every check between implementations still holds).
import pickle

import numpy as np

_rng = np.random.default_rng(1)
with open("fashionmnist_mlp_params.pkl", "wb") as _file:
    pickle.dump({
        "w0": (_rng.standard_normal((128, 784)) * 0.05).astype("float32"),
        "b0": _rng.standard_normal(128).astype("float32"),
        "w1": (_rng.standard_normal((10, 128)) * 0.1).astype("float32"),
        "b1": _rng.standard_normal(10).astype("float32"),
    }, _file)"""

#: What replaces a ``d`` fence, by the first word of its download.
SUBSTITUTES = {"torchvision": _FASHION_MNIST, "wget": _MLP_WEIGHTS}

#: Edits a code cell needs beyond layout, each with its reason: (notebook, fence line, old, new,
#: why). They are the book's known errata (:mod:`mlc_jupyter.errata`), the same table whose
#: entries course mode names when a cell typed as printed fails on one.
ERRATA: tuple[tuple[str, int, str, str, str], ...] = tuple(
    (e.notebook, e.fence_line, e.printed, e.corrected, e.note) for e in BOOK_ERRATA
)

#: Indentation of each blank-line separated group after a page break, where trying shifts in
#: order ("continue the previous block" first) would pick a layout that parses but is wrong.
INDENTS: dict[tuple[str, int], list[int]] = {
    ("ch2_tensor_program", 622): [4, 4],
    ("ch2_tensor_program", 676): [4, 0],
    ("ch5_integration", 3995): [4, 4],
    ("ch7_graph_optimization", 5156): [8, *[4] * 11, 8, 0, 0, 0, 0],
    ("ch6_1_gpu", 4426): [4, 4, 4, 4, 4, 4, 4, 0],
    ("ch6_2_hardware", 4787): [8, 0, 0, 0],
    ("ch7_graph_optimization", 5263): [4, 4, 4, *[0] * 7],
}

#: Indentation of single lines inside a page or wrap whose layout the PDF scrambled:
#: (notebook, fence line) -> {start of the line: its indentation}.
LINE_INDENTS: dict[tuple[str, int], dict[str, int]] = {
    ("ch3_end_to_end", 1609): {
        'lv1 = R.call_dps_packed("relu0"': 12,
        'out = R.call_dps_packed("linear0", (lv1': 12,
        "R.output(out)": 12,
        "return out": 8,
    },
    ("ch3_end_to_end", 1905): {"print(nd_res)": 0},
    ("ch5_integration", 3625): {"bb.emit_func_output(R, params=[A, B])": 4},
    ("ch4_auto_optimization", 3201): {
        'lv1 = R.call_dps_packed("env.relu"': 12,
        'out = R.call_dps_packed("env.linear"': 12,
        "R.output(out)": 12,
        "return out": 8,
    },
    # as in the book's sources: the function is finalised after the dataflow block
    ("ch5_integration", 3821): {
        "# output and finalize the function": 8,
        "bb.emit_func_output(output, fn_inputs)": 8,
    },
    ("ch7_graph_optimization", 5156): {"bb.emit_func_output(gv)": 12},
    ("ch6_2_hardware", 4569): {
        "accel_dma_copy(B_reg[:, :]": 16,
        "accel_tmm_add(C_accumulator": 16,
        "accel_dma_copy(C[i * 16": 12,
    },
    ("ch6_2_hardware", 4866): {
        "from tvm.contrib import clang, utils": 4,
        "temp = utils.tempdir()": 4,
        "ll_path = temp.": 4,
        "# Create LLVM ir from c source code": 4,
        "ll_code = clang.create_llvm": 4,
        "return ll_code": 4,
    },
}

#: Fences where the PDF glued the printed output to the code: (notebook, fence line) -> the
#: output's first characters (it and what follows are the output, not the cell).
GLUED_OUTPUT: dict[tuple[str, int], str] = {
    ("ch3_end_to_end", 1905): "[ [-21.10578",
    ("ch4_auto_optimization", 2606): "# from tvm import tir",
}

#: Text the PDF's layout lost or moved (not the book's content): (notebook, fence line, as
#: extracted, as printed, what happened). The cell still counts as verbatim.
LAYOUT_FIXES: tuple[tuple[str, int, str, str, str], ...] = (
    ("ch5_integration", 3821, "{'.'join(", "{'.'.join(", "the wrap at '.' dropped the '.'"),
    ("ch5_integration", 4064, "\n)\n    call_module_map", "\n    call_module_map",
     "the page break repeated the closing parenthesis"),
    ("ch6_1_gpu", 4298, 'storage_scope="shared"")', 'storage_scope="shared")',
     "the wrap inside the string repeated its quote"),
    ("ch6_2_hardware", 4569, "C_ accumulator", "C_accumulator", "the wrap added a space"),
    ("ch6_2_hardware", 4866, "int_stride_b", "int stride_b", "the wrap's space mark"),
    ("ch6_2_hardware", 4787, "            )\n        )\n    )\n", "            )\n        )\n",
     "the page break repeated the closing parenthesis"),
    ("ch6_2_hardware", 4787, "strides=[sa, -1]", "strides=[sa, 1]", "extraction: '-1' for '1'"),
    ("ch6_2_hardware", 4787, "strides=[sb, -1]", "strides=[sb, 1]", "extraction: '-1' for '1'"),
    ("ch6_2_hardware", 4787, "strides=[sc, -1]", "strides=[sc, 1]", "extraction: '-1' for '1'"),
)  # fmt: skip

#: Cells the book runs to show an error, or that cannot run as printed: (notebook, fence line).
EXPECTED_ERRORS: dict[tuple[str, int], str] = {
    ("ch2_tensor_program", 500): "the book's syntax of a block axis, not Python: a syntax error",
    ("ch2_tensor_program", 529): "the book's loop/block-iterator mismatch, printed with an error "
    "marker under the line: a syntax error at the marker",
}

#: Cells that run a kernel on a CUDA GPU: without one they must fail with the "no GPU" message.
GPU_CELLS: set[tuple[str, int]] = {
    ("ch6_1_gpu", 4246),
    ("ch6_1_gpu", 4399),
    ("ch6_1_gpu", 4483),
    ("ch6_1_gpu", 4498),
}


def classify(name: str, fences: list[Fence]) -> None:
    """Give each fence its kind from :data:`KINDS`; stop if the book no longer matches."""
    kinds = KINDS[name]
    if len(kinds) != len(fences):
        raise SystemExit(
            f"{name}: the book has {len(fences)} fences, KINDS lists {len(kinds)}; "
            "the book changed: update KINDS"
        )
    for fence, kind in zip(fences, kinds, strict=True):
        fence.kind = kind


def cell_text(name: str, fence: Fence) -> str:
    """The text a code cell holds: the book's, its layout repaired, errata applied."""
    text, _ = join_pages(fence.parts, INDENTS.get((name, fence.line)))
    glued = GLUED_OUTPUT.get((name, fence.line))
    if glued:
        text = text[: text.index(glued)].rstrip()
    for book, line, old, new, why in (*LAYOUT_FIXES, *ERRATA):
        if book == name and line == fence.line:
            if old not in text:
                raise SystemExit(f"{name}:{line}: text to repair not found: {old!r}")
            text = text.replace(old, new)
            if (book, line, old, new, why) in ERRATA:
                fence.repairs.append(why)
    for start, indent in LINE_INDENTS.get((name, fence.line), {}).items():
        text = "\n".join(
            " " * indent + x.lstrip() if x.lstrip().startswith(start) else x
            for x in text.split("\n")
        )
    return text


def chapter_notebook(name: str, title: str, fences: list[Fence]) -> dict:
    """The notebook of one chapter (nbformat 4, as a plain dict)."""
    cells = [
        _markdown(
            f"# {title}\n\nEvery code cell of this chapter of the English MLC book, in order, as "
            "the book prints it (the PDF's page breaks and wrapped lines joined again). Generated by "
            "`scripts/book_notebooks.py`; do not edit by hand. Listings the book only shows, and "
            "what its cells printed, are kept as text."
        ),
        _code("%load_ext mlc_jupyter", {"kind": "setup"}),
    ]
    for fence in joined_outputs(fences):
        meta: dict = {"fence_line": fence.line}
        if fence.kind in "ce":
            text = cell_text(name, fence)
            meta["kind"] = "code" if fence.kind == "c" else "error on purpose"
            if fence.repairs:
                meta["edits"] = fence.repairs
            tags = []
            if (name, fence.line) in EXPECTED_ERRORS:
                meta["expected_error"] = EXPECTED_ERRORS[(name, fence.line)]
                tags.append("raises-exception")
            if (name, fence.line) in GPU_CELLS:
                meta["gpu"] = True
                tags.append("raises-exception")
            cells.append(_code(text, meta, sorted(set(tags))))
        elif fence.kind == "d":
            original = "\n".join(_unwrap(functools.reduce(operator.iadd, fence.parts, [])))
            key = "torchvision" if "torchvision" in original else "wget"
            meta.update(kind="substituted", book_text=original)
            cells.append(_code(SUBSTITUTES[key], meta))
        else:
            raw = functools.reduce(operator.iadd, fence.parts, [])
            if fence.kind == "o" and is_log(raw):
                meta["log"] = True
                cells.append(_markdown(_folded("The book's output (MetaSchedule's log, ",
                                                "\n".join(log_lines(raw))), meta))  # fmt: skip
                continue
            text = "\n".join(_unwrap(raw))
            label = {
                "o": "The book's output:",
                "m": "Listing (shown by the book, not run):",
                "s": "Shell command (for the reader's machine, not run):",
                "x": "Exercise template (left to the reader, not run):",
            }[fence.kind]
            cells.append(_markdown(_fenced(label, text, fold=fence.kind == "o"), meta))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


#: A printed output longer than this many lines is folded (the book's tuning logs run to pages).
FOLD_LINES = 8


def _fenced(label: str, text: str, fold: bool) -> str:
    """``label`` and ``text`` in a code fence (its line breaks kept); a long printed output goes
    inside a ``<details>`` that the reader opens when they want it."""
    n_lines = text.count("\n") + 1
    if not fold or n_lines <= FOLD_LINES:
        return f"{label}\n\n```\n{text}\n```"
    return _folded(label.rstrip(":") + " (", text)


def _folded(summary_start: str, text: str) -> str:
    """``text`` in a code fence inside a closed ``<details>`` whose summary says its length."""
    summary = f"{summary_start}{text.count(chr(10)) + 1} lines, folded)"
    return f"<details>\n<summary>{summary}</summary>\n\n```text\n{text}\n```\n\n</details>"


def joined_outputs(fences: list[Fence]) -> list[Fence]:
    """Printed-output fences that follow each other with no prose between them joined into one:
    the PDF cut one cell's output (MetaSchedule's log runs to pages) into many blocks."""
    out: list[Fence] = []
    for fence in fences:
        if out and fence.kind == out[-1].kind == "o" and not fence.prose_before.strip():
            previous = out[-1]
            out[-1] = Fence(previous.line, [*previous.parts, *fence.parts],
                            previous.prose_before, "o")  # fmt: skip
        else:
            out.append(fence)
    return out


#: The first line of a record of MetaSchedule's log (``2025-07-10 12:32:04 [INFO] ...``).
_LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[")
#: A line MetaSchedule's log starts: a record, or a line of its task table and totals.
_LOG_LINE = re.compile(
    r"^(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[|ID \||\d+ \| |-{5}|Total (?:trials|latency))"
)
_DASHES = re.compile(r"^-{5,}\+?$")


def is_log(lines: list[str]) -> bool:
    """True for a printed output that holds MetaSchedule's log (timestamped records)."""
    return any(_LOG_RECORD.match(x.strip()) for x in lines)


def log_lines(lines: list[str]) -> list[str]:
    """MetaSchedule's log one line per line it printed: the PDF double-spaced the lines after a
    page break and wrapped long ones (with or without a ``↪`` mark, mid-word too), and a line
    that starts none of the log's kinds of line is the rest of the line before it."""
    pieces: list[str] = []
    for line in lines:
        text = _WRAP_MARK.sub("", line).strip()
        rule = re.match(r"^(-{5,}\+?)\s+(\S.*)$", text)  # a table rule with the next line
        pieces.extend(rule.groups() if rule else [text] if text else [])
    out: list[str] = []
    for piece in pieces:
        rest_of_rule = _DASHES.match(piece) and out and _DASHES.match(out[-1])
        if not out or (_LOG_LINE.match(piece) and not rest_of_rule):
            out.append(piece)
            continue
        head = out[-1]
        if piece == '"' and head.count('"') % 2 == 0:  # the PDF repeated a closing quote
            continue
        if head.endswith("_"):  # the PDF's visible space at a wrap
            head = head[:-1] + " "
        glued = (
            head.endswith(("-", " "))
            or piece == '"'
            or (head.endswith(".") and piece[:1].isdigit())
        )
        out[-1] = head + ("" if glued else " ") + piece
    return [_full_rule(line, out[:k]) for k, line in enumerate(out)]


def _full_rule(line: str, before: list[str]) -> str:
    """A rule of the task table as wide as its heading (the PDF kept five dashes of it)."""
    if not _DASHES.match(line):
        return line
    heading = next((x for x in reversed(before) if x.startswith("ID |")), line)
    return "-" * len(heading)


def _code(text: str, meta: dict, tags: list[str] | None = None) -> dict:
    metadata = {"mlc_book": meta}
    if tags:
        metadata["tags"] = tags
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": _cell_id(meta, text),
        "metadata": metadata,
        "outputs": [],
        "source": text,
    }


def _markdown(text: str, meta: dict | None = None) -> dict:
    return {
        "cell_type": "markdown",
        "id": _cell_id(meta or {}, text),
        "metadata": {"mlc_book": meta} if meta else {},
        "source": text,
    }


def _cell_id(meta: dict, text: str) -> str:
    import hashlib

    key = f"{meta.get('fence_line', '')}|{meta.get('kind', '')}|{text}"
    return hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:12]


def build_all(book: Path) -> dict[str, dict]:
    """Every chapter's notebook, by file stem."""
    lines = book.read_text().split("\n")
    starts = {title: lines.index(title) for _, title, _ in CHAPTERS}
    notebooks = {}
    for name, title, following in CHAPTERS:
        end = lines.index(following) if following else len(lines)
        fences = read_fences(lines, starts[title] + 1, end)
        classify(name, fences)
        notebooks[name] = chapter_notebook(name, title, fences)
    return notebooks


def census(notebooks: dict[str, dict]) -> dict[str, int]:
    """How many of the book's code cells are verbatim, edited, substituted, GPU-only."""
    counts = {"code cells": 0, "verbatim": 0, "edited": 0, "substituted": 0, "gpu": 0,
              "expected error": 0}  # fmt: skip
    for nb in notebooks.values():
        for cell in nb["cells"]:
            meta = cell["metadata"].get("mlc_book", {})
            if meta.get("kind") not in ("code", "substituted", "error on purpose"):
                continue
            counts["code cells"] += 1
            if meta["kind"] == "substituted":
                counts["substituted"] += 1
            elif meta.get("edits"):
                counts["edited"] += 1
            else:
                counts["verbatim"] += 1
            counts["gpu"] += bool(meta.get("gpu"))
            counts["expected error"] += "expected_error" in meta
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=Path, default=BOOK)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    notebooks = build_all(args.book)
    stale = []
    for name, nb in notebooks.items():
        path = args.out / f"{name}.ipynb"
        text = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    print(json.dumps(census(notebooks)))
    if stale:
        print(f"out of date: {', '.join(stale)} (run python scripts/book_notebooks.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

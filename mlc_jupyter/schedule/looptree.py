"""The loop nest of a TVMScript text as a compact tree (text-based: no TVM needed)."""

from __future__ import annotations

import re

__all__ = ["loop_tree", "loop_tree_text"]

_FOR = re.compile(r"^(?P<ind>\s*)for (?P<vars>[\w, ]+) in (?P<iter>.+):\s*$")
_BLOCK = re.compile(r'^(?P<ind>\s*)with T\.s?block\("(?P<name>[^"]+)"\)')
_KIND = re.compile(r"^(?:T\.)?(?P<kind>\w+)\((?P<args>.*)\)$")


def _label(names: str, kind: str, args: str) -> str:
    """``i, j`` + ``grid`` + ``128, 64`` -> ``i 128 · j 64``; ``i`` + ``parallel`` -> ``i parallel(128)``."""
    variables = [v.strip() for v in names.split(",")]
    if kind in ("range", "grid"):
        extents = [a.strip() for a in args.split(",")]
        if len(extents) == len(variables):
            return " · ".join(f"{v} {e}" for v, e in zip(variables, extents, strict=True))
    return f"{', '.join(variables)} {kind}({args})"


def loop_tree(script: str) -> list[dict]:
    """Loops and blocks of ``script`` as nested ``{"label", "kind", "line", "children"}`` dicts.

    ``kind`` is ``"block"`` or the loop kind (``range``, ``grid``, ``parallel``, ``vectorized``,
    ``unroll``, ``thread_binding``, ``serial``); ``line`` is 1-based in ``script``.
    """
    roots: list[dict] = []
    stack: list[tuple[int, dict]] = []
    for number, text in enumerate(script.splitlines(), 1):
        loop, block = _FOR.match(text), _BLOCK.match(text)
        if loop:
            indent, m = len(loop["ind"]), _KIND.match(loop["iter"].strip())
            kind = m["kind"] if m else "loop"
            args = m["args"] if m else loop["iter"]
            label = _label(loop["vars"], kind, args)
            node = {"label": label, "kind": kind, "line": number, "children": []}
        elif block and block["name"] != "root":
            indent = len(block["ind"])
            node = {"label": block["name"], "kind": "block", "line": number, "children": []}
        else:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        (stack[-1][1]["children"] if stack else roots).append(node)
        stack.append((indent, node))
    return roots


def loop_tree_text(script: str) -> str:
    """The loop tree as indented text (``i 128 · j 64`` for loops, ``[C]`` for blocks)."""
    out: list[str] = []

    def walk(nodes: list[dict], depth: int) -> None:
        for node in nodes:
            label = f"[{node['label']}]" if node["kind"] == "block" else node["label"]
            out.append("  " * depth + label)
            walk(node["children"], depth + 1)

    walk(loop_tree(script), 0)
    return "\n".join(out)

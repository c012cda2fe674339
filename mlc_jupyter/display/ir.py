"""TVM IR objects (IRModule, PrimFunc, Relax Function) -> highlighted TVMScript."""

from __future__ import annotations

import re
from typing import Any

from ..dialect import course_spelling
from .highlight import code_bundle
from .messages import messages_bundle

#: The comment TVM ends a module's script with when it holds constants (a model's weights).
_METADATA_NOTE = re.compile(
    r"\n?# (Metadata omitted\. Use show_meta=True in script\(\) method[^\n]*)\s*$"
)


def script_text(obj: Any) -> str:
    """The TVMScript text of an IR object, as ``obj.script()`` prints it."""
    script = getattr(obj, "script", None)
    return script() if callable(script) else str(obj)


def without_metadata_note(script: str) -> tuple[str, str]:
    """The script without TVM's closing ``# Metadata omitted…`` comment, and that comment's text
    (``""`` when there is none): shown folded with TVM's other messages, not as code."""
    found = _METADATA_NOTE.search(script)
    if found is None:
        return script, ""
    note = found.group(1) + " (a model's weights: print them with .script(show_meta=True))"
    return script[: found.start()], note


def folded_note(note: str) -> str:
    """TVM's note, folded like the messages a magic collects (HTML; empty without a note)."""
    return messages_bundle({"TVM": [note]})["text/html"] if note else ""


def describe(obj: Any, name: str = "") -> str:
    """A one-line title: the name, the kind of object, and the functions a module holds."""
    kind = type(obj).__name__
    functions = getattr(obj, "functions_items", None)
    label = f"{name}: {kind}" if name else kind
    if callable(functions):
        names = sorted(gv.name_hint for gv, _ in functions())
        label += f" ({len(names)} function{'s' if len(names) != 1 else ''}: {', '.join(names)})"
    return label


def ir_bundle(obj: Any, name: str = "", spelling: str = "tvm") -> dict[str, str]:
    """A mimebundle of ``obj``: highlighted TVMScript in HTML, plain TVMScript as text;
    ``spelling="course"`` prints it as the MLC book spells it (``T.block``, ``tir``)."""
    script = script_text(obj)
    if spelling == "course":
        script = course_spelling(script)
    code, note = without_metadata_note(script)
    bundle = code_bundle(code, title=describe(obj, name))
    return {**bundle, "text/html": bundle["text/html"] + folded_note(note), "text/plain": script}


def ir_html(obj: Any) -> str:
    """IPython HTML formatter for IR objects."""
    return ir_bundle(obj)["text/html"]

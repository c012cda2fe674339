"""TVM IR objects (IRModule, PrimFunc, Relax Function) -> highlighted TVMScript."""

from __future__ import annotations

from typing import Any

from .highlight import code_bundle


def script_text(obj: Any) -> str:
    """The TVMScript text of an IR object, as ``obj.script()`` prints it."""
    script = getattr(obj, "script", None)
    return script() if callable(script) else str(obj)


def describe(obj: Any, name: str = "") -> str:
    """A one-line title: the name, the kind of object, and the functions a module holds."""
    kind = type(obj).__name__
    functions = getattr(obj, "functions_items", None)
    label = f"{name}: {kind}" if name else kind
    if callable(functions):
        names = sorted(gv.name_hint for gv, _ in functions())
        label += f" ({len(names)} function{'s' if len(names) != 1 else ''}: {', '.join(names)})"
    return label


def ir_bundle(obj: Any, name: str = "") -> dict[str, str]:
    """A mimebundle of ``obj``: highlighted TVMScript in HTML, plain TVMScript as text."""
    return code_bundle(script_text(obj), title=describe(obj, name))


def ir_html(obj: Any) -> str:
    """IPython HTML formatter for IR objects."""
    return ir_bundle(obj)["text/html"]

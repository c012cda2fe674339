"""Code from elsewhere: traces, tuning records and modules read from a file or a database.

A trace is a program. Replayed and built, an annotation such as ``pragma_import_llvm`` links the
LLVM IR it carries into the library (module assembly, a constructor that runs when the library
loads), and an extern or packed call in a module calls whatever symbol or registry function it
names. A shared trace or work dir is therefore checked before anything from it is built: its
annotations must be among the hints MetaSchedule, dlight and the project's spaces write
(:data:`~mlc_jupyter.tvm_compat.TRACE_ANNOTATIONS`), and a module taken from a file may call no
code outside itself. The check refuses by name and step; nothing is built or loaded before it.
The notebook's own schedules are not checked: what the user typed is what the user asked for.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ..errors import ForeignCodeError
from ..tvm_compat import (
    ANNOTATE_INSTRUCTION,
    FOREIGN_CALL_OPS,
    IMPORT_PRAGMAS,
    TRACE_ANNOTATIONS,
    prim_func_type,
    trace_steps,
)
from .tir_walk import ir_nodes

#: What the refusal suggests.
_HINT = (
    "a trace, record or work dir from elsewhere is code: only the annotations MetaSchedule and "
    "dlight write are replayed from it. If you wrote this step yourself, apply it in a "
    "%%mlc_schedule cell; otherwise delete the file or work dir"
)


def _short(value: Any, most: int = 48) -> str:
    if isinstance(value, str) and value.startswith('"'):  # a string as the JSON trace holds it
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(value)
    text = json.dumps(value) if isinstance(value, str) else str(value)
    return text if len(text) <= most else text[: most - 3] + "..."


def _why(key: str) -> str:
    if key in IMPORT_PRAGMAS:
        return "links the native code it carries into the library, which runs when it loads"
    return "is not one of the annotations MetaSchedule and dlight write"


def check_trace(trace: Any, source: str) -> None:
    """Raise :class:`ForeignCodeError` when ``trace`` (a ``Trace`` or its JSON, as text or
    value) from ``source`` (``"trace.json"``, ``"line 12 of .../database_tuning_record.json"``)
    sets an annotation outside the allowlist; its step (counted from 1) and the key are named."""
    if isinstance(trace, str):
        try:
            trace = json.loads(trace)
        except json.JSONDecodeError:
            return  # not JSON: the loader's own error says so, nothing is replayed
    for number, (kind, inputs, attrs) in enumerate(trace_steps(trace), 1):
        if kind != ANNOTATE_INSTRUCTION or not attrs:
            continue
        key = str(attrs[0])
        if key in TRACE_ANNOTATIONS:
            continue
        value = _short(inputs[1]) if len(inputs) > 1 else "..."
        raise ForeignCodeError(
            f"step {number} of {source}: sch.annotate(..., ann_key={json.dumps(key)}, "
            f"ann_val={value}) "
            f"{_why(key)}; refused, nothing was built",
            hint=_HINT,
        )


def check_module(mod: Any, source: str) -> None:
    """Raise :class:`ForeignCodeError` when a module from ``source`` links code (an import
    pragma on a loop, a block or an attribute statement) or calls code outside itself (an
    extern symbol, a function of TVM's registry); the function and what it does are named."""
    funcs = [("main", mod)] if isinstance(mod, prim_func_type()) else mod.functions_items()
    for gv, func in funcs:
        name = getattr(gv, "name_hint", gv)
        if not isinstance(func, prim_func_type()):
            continue
        for node, _stmt in ir_nodes(func.body):
            for key in _keys(node):
                if key in IMPORT_PRAGMAS:
                    raise ForeignCodeError(
                        f"{name} in {source} carries the annotation {json.dumps(key)}, which "
                        f"{_why(key)}; "
                        "refused, nothing was built",
                        hint=_HINT,
                    )
            op = getattr(getattr(node, "op", None), "name", None)
            if op in FOREIGN_CALL_OPS:
                symbol = _short(getattr(node.args[0], "value", node.args[0])) if node.args else ""
                raise ForeignCodeError(
                    f"{name} in {source} calls {symbol} outside the kernel "
                    f"({op.rsplit('.', 1)[-1]}); refused, nothing was built",
                    hint="pass the module from your notebook (--mod MOD): code from a file may "
                    "only schedule it",
                )


def _keys(node: Any) -> list[str]:
    """The annotation keys of a loop or block, and the key of an attribute statement
    (``T.attr(..., "pragma_import_llvm", ...)``)."""
    annotations = getattr(node, "annotations", None)
    keys = [str(k) for k in annotations] if hasattr(annotations, "keys") else []
    attr_key = getattr(node, "attr_key", None)
    return [*keys, str(attr_key)] if attr_key is not None else keys

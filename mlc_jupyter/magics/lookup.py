"""How a magic finds the object a user names: an expression in the notebook's namespace."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError


def lookup(shell: Any, expr: str, magic: str, what: str = "") -> Any:
    """The value of ``expr`` (a name, ``obj.attr``, ``d[k]``...) in the notebook's namespace.

    A name that is not there becomes one ``UsageError`` line naming the magic and ``what`` was
    looked for, e.g. ``%mlc_trace: cannot find the trace 'sch2' in the notebook: ...``.
    """
    try:
        return eval(expr, shell.user_ns)  # noqa: S307 - the user's own expression, in their kernel
    except Exception as err:  # noqa: BLE001 - any failure means the name is not usable
        thing = f"{what} {expr!r}" if what else repr(expr)
        raise UsageError(f"%{magic}: cannot find {thing} in the notebook: {err}") from None


def unquote(text: Any) -> Any:
    """``"'np.maximum(A @ B, 0)'"`` -> ``np.maximum(A @ B, 0)`` (quotes a user put around an arg)."""
    if isinstance(text, str) and len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text

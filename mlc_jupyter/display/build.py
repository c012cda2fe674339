"""A build as text: how it was made (built, cached in memory or on disk, checked), for which target,
its functions' signatures, its device code and notes."""

from __future__ import annotations

from ..compilation.cached_build import Built
from ..compilation.targets import describe_target


def built_text(built: Built, name: str = "") -> str:
    how = "cached, built before" if built.cached else f"built in {built.build_s:.2f} s"
    if getattr(built, "from_disk", False):
        how = "cached on disk, built before"
    if getattr(built, "checked", False):
        how += ", checked (every buffer index is tested at run time)"
    if getattr(built, "isolated", False):
        how += ", isolated (its functions run in a worker process: a crash fails the call)"
    funcs = "; ".join(
        f"{n}({', '.join(p.describe() for p in sig.params)})" for n, sig in built.signatures.items()
    )
    label = f"{name}: " if name else ""
    text = f"{label}{how} for {describe_target(built.target)}\nfunctions: {funcs}"
    if built.device_code is not None:
        text += "\n" + built.device_code.summary()
    return "\n".join([text, *built.notes])

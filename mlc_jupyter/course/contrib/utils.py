"""``tvm.contrib.utils`` of the course: TVM 0.27's ``tvm.support.utils`` (``tempdir`` ...)."""

from __future__ import annotations

from typing import Any

from ...tvm_compat import support_module


def __getattr__(name: str) -> Any:
    return getattr(support_module("utils"), name)

"""Library messages emitted while a magic runs are captured and shown folded below its output.

PyTorch's deprecation warnings at an import, TVM's C++ ``Warning:`` lines written to file
descriptor 2 (which a Jupyter kernel shows as red stderr) are not the learner's business unless
the magic failed. Warnings raised from the user's own code (a cell, a file outside the
installed packages) pass through as usual, and so do the workbench's own warnings to the user
(:data:`TOLD_TO_USER`), as one line without the source line that raised them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import sysconfig
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from IPython.display import display

from ..caches import native_log_file, sweep_logs
from ..config import CacheWarning, cache_dir
from ..display.messages import messages_bundle
from ..errors import InsecureRPCWarning

#: Warnings that are the user's business wherever they are raised (a cache not used, RPC without
#: authentication): never folded away with the libraries' messages.
TOLD_TO_USER = (CacheWarning, InsecureRPCWarning)

#: A TVM log line: ``[11:22:33] /path/transform.h:1261: Warning: ...``.
_TVM_LINE = re.compile(r"^\[\d{2}:\d{2}:\d{2}\] \S+:\d+: ")
#: A TVM log line that is a label with nothing after it (the VM's debug ``Scope Saving:`` when it
#: saves an executable with the default memory scope): it says nothing to a learner.
_EMPTY_LABEL = re.compile(r"^(Warning: )?[A-Za-z][\w ]*:$")
_LIBRARY_DIRS = tuple(
    os.path.realpath(p) for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]}
)


def _from_library(filename: str) -> bool:
    """True for a warning raised inside an installed package or the standard library."""
    return os.path.realpath(filename).startswith(_LIBRARY_DIRS)


def _native_messages(text: str) -> dict[str, list[str]]:
    """TVM's log lines (each with the lines that continue it) and any other native output."""
    tvm_lines: list[str] = []
    other: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if _TVM_LINE.match(line):
            tvm_lines.append(_TVM_LINE.sub("", line, count=1).strip())
        elif tvm_lines and line.startswith((" ", "\t")):
            tvm_lines[-1] += "\n" + line
        else:
            other.append(line)
    tvm_lines = [m for m in tvm_lines if not _EMPTY_LABEL.match(m)]
    return {"TVM": tvm_lines, "native libraries": other}


#: How long the log of a kernel that is gone is kept (to read what it printed before a crash).
LOG_KEEP_S = 86400.0
_swept: set[Path] = set()


def native_log_path() -> Path:
    """Where native stderr goes while a magic runs: a file in the cache, one per kernel process,
    so what TVM printed before a crash that took the kernel down can still be read. The first
    call of a process sweeps the logs of kernels gone for more than :data:`LOG_KEEP_S`."""
    folder = cache_dir()
    if folder not in _swept:
        _swept.add(folder)
        sweep_logs(folder, LOG_KEEP_S)
    return native_log_file(folder, os.getpid())


@contextlib.contextmanager
def _fd2_captured() -> Iterator[Callable[[], str]]:
    """File descriptor 2 into :func:`native_log_path` while the block runs; yields its reader."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 to borrow (an embedded interpreter)
        yield lambda: ""
        return
    path = native_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lambda: (sink.seek(0), sink.read().decode(errors="replace"))[1]
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@contextlib.contextmanager
def captured_messages(groups: dict[str, list[str]]) -> Iterator[None]:
    """Collect the block's library warnings and native stderr output into ``groups`` (source ->
    messages, filled when the block ends, also when it raises); the user's own warnings pass
    through to IPython's display of warnings."""
    caught: list[warnings.WarningMessage] = []
    native = ""
    try:
        with _fd2_captured() as read, warnings.catch_warnings(record=True) as caught:
            try:
                yield
            finally:
                native = read()
    finally:
        python = []
        for w in caught:
            if issubclass(w.category, TOLD_TO_USER):
                warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, "")
            elif _from_library(w.filename):
                python.append(f"{w.category.__name__}: {w.message}")
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
        groups.update(_native_messages(native))
        groups["Python libraries"] = python


def quiet(magic: Callable[..., Any]) -> Callable[..., Any]:
    """``magic`` with its library messages captured, then shown folded (open when it failed)."""

    @functools.wraps(magic)
    def run(*args: Any, **kwargs: Any) -> Any:
        groups: dict[str, list[str]] = {}
        try:
            with captured_messages(groups):
                result = magic(*args, **kwargs)
        except BaseException:
            _show(groups, opened=True)
            raise
        _show(groups, opened=False)
        return result

    run.__module__ = __name__  # wrapped once: a second registration leaves it as it is
    return run


def _show(groups: dict[str, list[str]], opened: bool) -> None:
    if any(groups.values()):
        display(messages_bundle(groups, opened=opened), raw=True)

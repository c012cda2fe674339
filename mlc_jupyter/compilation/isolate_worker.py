"""The worker process of isolated builds (:mod:`.isolate`): ``python -m
mlc_jupyter.compilation.isolate_worker PARENT_PID READ_FD WRITE_FD FROM_MAIN_THREAD``.

It reads one JSON request per line (call a function of a library, calibrate, time it) and
answers one JSON line. Arguments are files in shared memory that the parent mapped too; the
kernel writes the parent's copies there. It loads only the libraries the requests name, ends
with its parent (``PR_SET_PDEATHSIG``, and at the end of its input), and ignores Ctrl-C, which
the parent handles by killing it.
"""

from __future__ import annotations

import ctypes
import json
import math
import mmap
import os
import signal
import sys
import time
from typing import Any

import numpy as np

from ..errors import error_reason
from ..tvm_compat import BOUND_CHECK_MESSAGE, load_executable, tensor_view, tvm

#: Most calls one timing sample makes (as ``%mlc_time`` in process).
MAX_NUMBER = 1 << 20
_PR_SET_PDEATHSIG = 1


class Session:
    """The libraries, functions and shared argument files this worker holds."""

    def __init__(self) -> None:
        self.modules: dict[str, Any] = {}
        self.maps: dict[str, mmap.mmap] = {}
        self.tensors: dict[tuple[str, tuple[int, ...], str], Any] = {}
        self.timers: dict[tuple[str, str, int], Any] = {}

    def function(self, library: str, symbol: str) -> Any:
        if library not in self.modules:
            self.modules[library] = load_executable(library, relax=False).mod
        return self.modules[library][symbol]

    def argument(self, spec: dict[str, Any]) -> Any:
        if "scalar" in spec:
            return spec["scalar"]
        path, shape, dtype = spec["path"], tuple(spec["shape"]), spec["dtype"]
        key = (path, shape, dtype)
        if key not in self.tensors:
            if path not in self.maps:
                with open(path, "r+b") as file:
                    self.maps[path] = mmap.mmap(file.fileno(), 0)
            array = np.frombuffer(self.maps[path], dtype=dtype, count=math.prod(shape))
            self.tensors[key] = tensor_view(array.reshape(shape))
        return self.tensors[key]

    def drop(self, paths: list[str]) -> None:
        """Forget argument files the parent replaced (a larger argument)."""
        gone = set(paths)
        self.tensors = {k: v for k, v in self.tensors.items() if k[0] not in gone}
        for path in gone:
            self.maps.pop(path, None)

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        self.drop(request.get("drop", []))
        func = self.function(request["library"], request["symbol"])
        args = [self.argument(spec) for spec in request["args"]]
        op = request["op"]
        if op == "call":
            func(*args)
            return {"ok": True}
        if op == "calibrate":
            func(*args)  # a warm-up call
            start = time.perf_counter()
            func(*args)
            once = max(time.perf_counter() - start, 1e-9)
            return {"number": max(1, min(MAX_NUMBER, math.ceil(request["min_s"] / once)))}
        if op == "time":
            number = int(request["number"])
            key = (request["library"], request["symbol"], number)
            if key not in self.timers:
                module = self.modules[request["library"]]
                device = tvm().cpu(0)
                self.timers[key] = module.time_evaluator(
                    request["symbol"], device, number=number, repeat=1
                )
            return {"seconds": float(self.timers[key](*args).mean)}
        return {"error": f"unknown request {op!r}"}


def _die_with(parent: int, thread_lives_on: bool) -> None:
    """Be killed when the parent dies (Linux: the death signal comes when the thread that
    started the worker ends, so only a main thread's start asks for it), and leave now if the
    parent has already gone; otherwise the end of the requests ends the worker."""
    if thread_lives_on and sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        sys.exit(0)


def main(argv: list[str]) -> None:
    parent, read_fd, write_fd, from_main = (int(a) for a in argv[:4])
    _die_with(parent, bool(from_main))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tvm()  # import TVM before saying ready, so the first call does not pay for it
    session = Session()
    with os.fdopen(read_fd, "rb") as requests, os.fdopen(write_fd, "wb") as answers:
        answers.write(json.dumps({"ready": os.getpid()}).encode() + b"\n")
        answers.flush()
        for line in requests:
            try:
                answer = session.handle(json.loads(line))
            except Exception as err:  # noqa: BLE001 - the parent raises it as the call's error
                answer = {
                    "error": error_reason(err),
                    "out_of_bounds": BOUND_CHECK_MESSAGE in str(err),
                }
            answers.write(json.dumps(answer).encode() + b"\n")
            answers.flush()


if __name__ == "__main__":
    main(sys.argv[1:])

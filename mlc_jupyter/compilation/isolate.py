"""Run a TIR build's functions in a worker process, so a crashing kernel fails its call, not the
notebook (``%mlc_isolate on``, ``%mlc_build MOD --isolate``).

The worker is a fresh Python (``python -m mlc_jupyter.compilation.isolate_worker``), never a fork
of this process (a fork copies TVM's thread pools half alive). It loads only the libraries of the
builds called through it, each from the private copy the build runs from here, and stays alive
between calls, as a Jupyter kernel does. Arguments travel through files in shared memory that
both processes map: the caller's arrays are copied in, the kernel reads and writes them there,
and what it wrote is copied back into the caller's arrays, as an in-process call with NumPy
arrays does. A signal that ends the worker (SIGSEGV, SIGBUS, an abort) makes the call raise
:class:`~mlc_jupyter.errors.KernelCrashError` (function, signal, arguments), and the next call
starts a new worker. Ctrl-C during a call kills the worker (a running kernel cannot be
interrupted) and the next call starts a new one.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import mmap
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BuildError, CallError, KernelCrashError
from .bounds import stopped_out_of_bounds
from .call import (
    argument_count,
    array_indices,
    array_kind,
    as_kind,
    as_numpy,
    check_argument,
    compiled_symbol,
    copy_into_callers,
    prepare,
    scalar_argument,
    written_indices,
)
from .signatures import Signature
from .targets import is_gpu_target

#: How long a new worker may take to import TVM and say it is ready.
START_TIMEOUT_S = 180.0
#: How long a killed worker may take to be reaped.
KILL_TIMEOUT_S = 10.0
#: What each signal that ends a worker usually means for a kernel.
_SIGNAL_MEANING = {
    "SIGSEGV": "an access to memory the process does not have",
    "SIGBUS": "an access to memory that cannot be read (a truncated file, a bad alignment)",
    "SIGABRT": "an abort",
    "SIGFPE": "an arithmetic fault (an integer division by zero)",
    "SIGILL": "an illegal instruction (code built for another CPU)",
    "SIGKILL": "killed from outside (out of memory?)",
}


def refuse_isolation(relax: bool, target: Any, *, explicit: bool) -> str:
    """Why a build (of a Relax module or not, for ``target``) cannot run isolated (``""`` when
    it can). ``explicit`` (``--isolate``, ``isolate=True``) raises :class:`BuildError` instead;
    the session's setting gets the reason as a note, and the build runs in this process."""
    if relax:
        why = (
            "a Relax VM executable is not isolated (only TIR kernels run in the worker): it "
            "runs in this process"
        )
        hint = "build it without --isolate; to isolate a kernel, build its PrimFunc on its own"
    elif is_gpu_target(target):
        why = "a GPU build is not isolated (only CPU builds run in the worker): it runs here"
        hint = "build it without --isolate, or isolate the kernel built for llvm"
    else:
        return ""
    if explicit:
        raise BuildError(f"--isolate: {why}", hint=hint)
    return f"not isolated: {why}"


class _Arena:
    """Shared memory for the arguments of calls: one file per argument position, mapped here and
    in the worker, grown (as a new file) when an argument no longer fits."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.tag = uuid.uuid4().hex[:8]
        self.files: dict[int, tuple[str, int, mmap.mmap]] = {}
        self.dropped: list[str] = []
        weakref.finalize(self, _unlink_all, self.files)

    def view(self, index: int, shape: tuple[int, ...], dtype: str) -> tuple[np.ndarray, str]:
        """A writable array of ``shape`` and ``dtype`` in position ``index``'s shared file, and
        the file's path (page-aligned, so TVM's 64-byte alignment holds)."""
        size = max(64, math.prod(shape) * np.dtype(dtype).itemsize)
        found = self.files.get(index)
        if found is None or found[1] < size:
            if found is not None:
                self.dropped.append(found[0])
                with contextlib.suppress(OSError):
                    os.unlink(found[0])
            path = str(self.folder / f"arg-{self.tag}-{index}-{uuid.uuid4().hex[:6]}")
            with open(path, "w+b") as file:
                file.truncate(size)
                memory = mmap.mmap(file.fileno(), size)
            found = self.files[index] = (path, size, memory)
        count = math.prod(shape)
        array = np.frombuffer(found[2], dtype=dtype, count=count).reshape(shape)
        return array, found[0]


def _unlink_all(files: dict[int, tuple[str, int, mmap.mmap]]) -> None:
    for path, _, _ in files.values():
        with contextlib.suppress(OSError):
            os.unlink(path)


class Worker:
    """The worker process (one per notebook, as a pool of one) and the pipes to it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.process: subprocess.Popen | None = None
        self.folder = Path(tempfile.mkdtemp(prefix="mlc-isolate-", dir=_shared_memory_root()))
        atexit.register(shutil.rmtree, self.folder, True)
        self.arena = _Arena(self.folder)
        self._send: Any = None
        self._receive = -1
        self._pending = b""
        self._ready = False
        self.log = self.folder / "worker.log"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> None:
        """Start the worker unless it runs (returns at once: it says it is ready later)."""
        with self.lock:
            if self.process is not None and self.process.poll() is None:
                return
            if self.process is not None:  # ended between calls: close its pipes
                self.kill()
            # the worker dies with the thread that starts it (PR_SET_PDEATHSIG), so only the
            # main thread, which lives as long as the notebook, asks for that
            main = threading.current_thread() is threading.main_thread()
            to_worker, from_here = os.pipe()
            to_here, from_worker = os.pipe()
            package_root = str(Path(__file__).resolve().parents[2])
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (package_root, env.get("PYTHONPATH", "")) if p
            )
            with open(self.log, "ab") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "mlc_jupyter.compilation.isolate_worker",
                     str(os.getpid()), str(to_worker), str(from_worker), str(int(main))],
                    pass_fds=(to_worker, from_worker), stdin=subprocess.DEVNULL,
                    stdout=log, stderr=log, env=env, start_new_session=True,
                )  # fmt: skip
            os.close(to_worker)
            os.close(from_worker)
            self._send = os.fdopen(from_here, "wb")
            self._receive = to_here
            self._pending = b""
            self._ready = False

    def kill(self) -> None:
        """End the worker now (a running kernel cannot be interrupted any other way)."""
        with self.lock:
            process, self.process = self.process, None
            with contextlib.suppress(OSError):
                self._send.close()
            with contextlib.suppress(OSError):
                os.close(self._receive)
            if process is not None and process.poll() is None:
                process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(KILL_TIMEOUT_S)

    def request(self, message: dict[str, Any], crash: Any) -> dict[str, Any]:
        """Send ``message`` and return the worker's answer. When the worker dies meanwhile,
        ``crash(status, log)`` builds the error raised; Ctrl-C kills the worker and re-raises."""
        with self.lock:
            self.start()
            message = {**message, "drop": self.arena.dropped}
            try:
                if not self._ready:
                    self._wait_ready()
                self._send.write(json.dumps(message).encode() + b"\n")
                self._send.flush()
                self.arena.dropped = []
                line = self._read_line(None)
            except KeyboardInterrupt:
                self.kill()
                raise
            except (BrokenPipeError, OSError):
                line = b""
            if line:
                return json.loads(line)
            status = self._status()
            self.kill()
            raise crash(status, _log_tail(self.log))

    def _status(self) -> int:
        """The exit status of a worker that closed its pipe (``-9`` when it had to be killed)."""
        process = self.process
        if process is None:
            return -signal.SIGKILL
        try:
            return process.wait(KILL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return -signal.SIGKILL

    def _read_line(self, timeout_s: float | None) -> bytes:
        """The worker's next line (``b""`` when it died or ``timeout_s`` passed). It waits in
        short slices, so Ctrl-C is seen within one even when the signal reached another thread
        of this process (the blocking read of the main thread would not be interrupted)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self._receive], [], [], 0.1)
            if ready:
                chunk = os.read(self._receive, 1 << 16)
                if not chunk:
                    return b""
                self._pending += chunk
                continue
            dead = self.process is None or self.process.poll() is not None
            if dead or (deadline is not None and time.monotonic() > deadline):
                return b""
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def _wait_ready(self) -> None:
        if self._read_line(START_TIMEOUT_S):
            self._ready = True
            return
        self.kill()
        raise BuildError(
            f"the isolated worker did not start: {_log_tail(self.log) or 'no message'}",
            hint=f"its log is {self.log}; run the build without --isolate meanwhile",
        )


def _shared_memory_root() -> str | None:
    """``/dev/shm`` where it is a writable folder (memory, not disk), else the temp folder."""
    shm = Path("/dev/shm")  # noqa: S108 - mkdtemp makes a private (0700) folder in it
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def _log_tail(log: Path, lines: int = 3) -> str:
    """The worker's last lines that say something (TVM's backtrace of a crash does not)."""
    try:
        text = log.read_bytes()[-4096:].decode(errors="replace")
    except OSError:
        return ""
    kept = [
        line.strip() for line in text.splitlines()
        if line.strip() and not line.strip().startswith(("File ", "!!!", "Traceback"))
    ]  # fmt: skip
    return " | ".join(kept[-lines:])


_WORKER: list[Worker] = []
_WORKER_LOCK = threading.Lock()


def worker() -> Worker:
    """This process's worker (made on first use; started by :func:`start_worker` or a call)."""
    with _WORKER_LOCK:
        if not _WORKER:
            _WORKER.append(Worker())
            atexit.register(_WORKER[0].kill)
        return _WORKER[0]


def start_worker() -> None:
    """Start the worker now, so that its start (importing TVM) overlaps the user's next cell."""
    worker().start()


_EXPORTED: dict[str, str] = {}


def library_of(built: Any) -> str:
    """The shared library the worker loads for ``built``: the private copy the build runs from
    here, or (a build kept in memory only) one exported now into a private folder."""
    if built.library:
        return built.library
    found = _EXPORTED.get(built.key)
    if found is None or not os.path.exists(found):
        folder = Path(tempfile.mkdtemp(prefix="mlc-isolate-lib-"))
        atexit.register(shutil.rmtree, folder, True)
        found = str(folder / "lib.so")
        built.executable.export_library(found)
        _EXPORTED[built.key] = found
    return found


def describe_arguments(sig: Signature, args: tuple[Any, ...]) -> tuple[str, ...]:
    """``A: float32[128, 128]`` for each argument (``n = 3`` for a scalar)."""
    described = []
    written = set(written_indices(sig))
    for index, value in enumerate(args):
        name = sig.params[index].name if index < len(sig.params) else f"#{index}"
        shape = getattr(value, "shape", None)
        if shape is None:
            described.append(f"{name} = {value!r}")
            continue
        dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
        dims = ", ".join(str(int(s)) for s in shape)
        described.append(f"{name}: {dtype}[{dims}]" + (" (written)" if index in written else ""))
    return tuple(described)


def crash_error(
    built: Any, name: str, status: int, log: str, arguments: tuple[str, ...]
) -> KernelCrashError:
    """The error of a call whose worker died with ``status`` (``-N``: signal N)."""
    if status < 0:
        try:
            signame = signal.Signals(-status).name
        except ValueError:
            signame = f"signal {-status}"
        meaning = _SIGNAL_MEANING.get(signame)
        how = f"crashed with {signame}" + (f" ({meaning})" if meaning else "")
    else:
        signame, how = "", f"ended its worker (exit status {status})"
    said = f"; the worker said: {log}" if log else ""
    message = (
        f"{name} {how} in its isolated worker, called with {', '.join(arguments)}: the call "
        f"did not finish and wrote nothing into the caller's arrays; the notebook lives on, and "
        f"the next call starts a new worker{said}"
    )
    if built.checked:
        hint = (
            "this build is checked (every buffer index is tested), so look elsewhere: an extern "
            "call, a T.decl_buffer alias, arguments smaller than the kernel assumes"
        )
    else:
        hint = (
            "an index outside its buffer is the usual cause: build it with --checked "
            "(%mlc_build MOD --checked, or %mlc_checked on) to have the bad index named"
        )
    return KernelCrashError(message, function=name, signal=signame, arguments=arguments, hint=hint)


class IsolatedCall:
    """One function of an isolated build with its arguments copied into shared memory once:
    :meth:`run` calls it in the worker, :meth:`outputs` reads what it wrote, :meth:`calibrate`
    and :meth:`sample` time it there (``%mlc_time``)."""

    def __init__(
        self, built: Any, sig: Signature, args: tuple[Any, ...], arena: _Arena | None = None
    ) -> None:
        self.built, self.sig, self.args = built, sig, args
        self.worker = worker()
        self.arena = arena or _Arena(self.worker.folder)
        self.library = library_of(built)
        self.symbol = compiled_symbol(built.mod, sig.name)
        n_all, n_in = argument_count(sig, args)
        self.wire: list[dict[str, Any]] = []
        self.views: list[np.ndarray | None] = []
        for index, value in enumerate(args):
            param = sig.params[index]
            if param.scalar:
                self.wire.append({"scalar": scalar_argument(sig, index, value)})
                self.views.append(None)
                continue
            check_argument(sig, index, value)
            data = as_numpy(value)
            view, path = self.arena.view(index, tuple(data.shape), str(data.dtype))
            np.copyto(view, data)
            self.wire.append({"path": path, "shape": list(data.shape), "dtype": str(data.dtype)})
            self.views.append(view)
        self.allocated = 0
        if len(args) == n_in and n_all != n_in:
            for offset, param in enumerate(sig.outputs):
                if param.shape is None or None in param.shape:
                    raise CallError(
                        f"{sig.name}: pass output {param.name!r}, its shape is symbolic"
                    )
                view, path = self.arena.view(len(args) + offset, param.shape, param.dtype)
                self.wire.append({"path": path, "shape": list(param.shape), "dtype": param.dtype})
                self.views.append(view)
                self.allocated += 1

    def _ask(self, op: str, **fields: Any) -> dict[str, Any]:
        message = {"op": op, "library": self.library, "symbol": self.symbol, "args": self.wire}
        answer = self.worker.request({**message, **fields}, self._crash)
        if "error" in answer:
            if self.built.checked and answer.get("out_of_bounds"):
                raise stopped_out_of_bounds(self.built.mod, self.sig.name)
            raise CallError(f"{self.sig.name} failed at run time: {answer['error']}")
        return answer

    def _crash(self, status: int, log: str) -> KernelCrashError:
        shown = tuple(self.args) + tuple(v for v in self.views[len(self.args) :] if v is not None)
        return crash_error(
            self.built, self.sig.name, status, log, describe_arguments(self.sig, shown)
        )

    def run(self) -> None:
        """Call the function once in the worker (the shared arguments are its arguments)."""
        self._ask("call")

    def outputs(self) -> list[np.ndarray]:
        """Copies of what the call writes: the outputs it allocated, else the written
        arguments."""
        if self.allocated:
            chosen = self.views[-self.allocated :]
        else:
            written = written_indices(self.sig) or array_indices(self.sig, len(self.args))
            chosen = [self.views[i] for i in written]
        return [np.array(v) for v in chosen if v is not None]

    def copy_back(self) -> None:
        """Copy what the kernel wrote into the caller's arrays (NumPy, PyTorch, TVM)."""
        written = written_indices(self.sig) or array_indices(self.sig, len(self.args))
        copy_into_callers(tuple(self.args[i] for i in written), [self.views[i] for i in written])

    def calibrate(self, min_s: float) -> int:
        """Calls per sample so that one sample lasts about ``min_s``, found in the worker."""
        return int(self._ask("calibrate", min_s=min_s)["number"])

    def sample(self, number: int) -> float:
        """Seconds per call over ``number`` calls, timed in the worker by TVM's evaluator."""
        return float(self._ask("time", number=number)["seconds"])


def isolated_function(built: Any, name: str | None) -> Any:
    """A Python callable for function ``name`` of ``built`` that runs it in the worker; it
    takes and returns what :func:`~.call.bound_function`'s callable does."""
    sig = prepare(built, name)
    process = worker()

    def call(*args: Any) -> Any:
        like = array_kind(args[0]) if args else "numpy"
        with process.lock:
            isolated = IsolatedCall(built, sig, args, process.arena)
            isolated.run()
            if isolated.allocated:
                outs = [as_kind(v, like) for v in isolated.outputs()]
                return outs[0] if len(outs) == 1 else tuple(outs)
            isolated.copy_back()
        return None

    call.__name__ = sig.name
    call.built = built  # type: ignore[attr-defined] - lets %mlc_time find the module again
    call.func_name = sig.name  # type: ignore[attr-defined]
    call.__doc__ = f"{sig.name}({', '.join(p.describe() for p in sig.params)}), isolated"
    return call

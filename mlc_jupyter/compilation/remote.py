"""Devices behind a TVM RPC tracker, for building, timing and tuning from a machine without them.

``--rpc HOST:PORT:KEY`` (or ``env``: ``TVM_TRACKER_HOST/PORT/KEY``) names a tracker and the key its
servers registered with. Every step that can wait fails fast instead: the tracker must answer
within seconds, the key must be registered, a server must become free within
``REQUEST_TIMEOUT_S``, and the remote device must exist before anything is built for it. A GPU
target is completed from the remote GPU (architecture, threads, shared memory), so a machine
without that GPU builds for it exactly; modules go over as exported libraries, and the remote
machine compiles their CUDA kernels when it loads them.

TVM RPC has no authentication or encryption: whoever reaches a tracker or a server can upload a
library and run it as the server's user. The first use of a tracker in a process says so once
(:class:`~mlc_jupyter.errors.InsecureRPCWarning`), and every hint binds to ``127.0.0.1`` and
reaches it through an SSH tunnel, never ``0.0.0.0`` (TVM's default for both commands).
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BuildError, InsecureRPCWarning, RemoteError, error_reason
from ..tvm_compat import close_rpc_session, tvm
from .source import in_memory
from .targets import device_kind, device_target, gpu_present, is_gpu_target, resolve_target

#: How long to wait for a free server under the key before giving up.
REQUEST_TIMEOUT_S = 60.0
#: How long a tracker may take to accept a connection.
CONNECT_TIMEOUT_S = 3.0
#: The longest a session may live on the server (it frees the server after this).
SESSION_TIMEOUT_S = 600


@dataclass(frozen=True)
class RPCSpec:
    """Where to run: a tracker's host, port and the device key."""

    host: str
    port: int
    key: str

    def __str__(self) -> str:
        return f"{self.host}:{self.port}:{self.key}"


#: What every first use of RPC in a process says, in one line (TVM's security page: RPC is for a
#: trusted network only).
INSECURE_RPC = (
    "TVM RPC has no authentication or encryption: anyone who can reach the tracker or a server"
    " can upload a library and run it as that server's user; use it only on a trusted network"
    " or through an SSH tunnel (ssh -L)"
)
#: Whether this process has said :data:`INSECURE_RPC` (``"said"`` once it has).
_WARNED: set[str] = set()

#: How to start a tracker and a server that only this machine and the GPU machine reach: both
#: bound to loopback there, their ports forwarded here by SSH. TVM binds both to 0.0.0.0 unless
#: told, which opens them to every network the machine is on.
TRACKER_HINT = (
    "on the device machine: python -m tvm.exec.rpc_tracker --host 127.0.0.1 --port 9190, then"
    " from here: ssh -N -L 9190:127.0.0.1:9190 -L 9090:127.0.0.1:9090 DEVICE_HOST (bind to"
    " loopback or a private network the devices share, never 0.0.0.0: TVM RPC has no"
    " authentication)"
)
SERVER_HINT = (
    "on the device machine: python -m tvm.exec.rpc_server --host 127.0.0.1 --port 9090"
    " --tracker 127.0.0.1:9190 --key KEY (never --host 0.0.0.0: TVM RPC has no authentication;"
    " forward each server's port with ssh -L as well)"
)


def warn_insecure_rpc() -> None:
    """Say :data:`INSECURE_RPC` once per process, as an :class:`InsecureRPCWarning`."""
    if not _WARNED:
        warnings.warn(INSECURE_RPC, InsecureRPCWarning, stacklevel=3)
        _WARNED.add("said")


#: The environment variables that name a tracker and a key (TVM's own names).
TRACKER_VARS = ("TVM_TRACKER_HOST", "TVM_TRACKER_PORT", "TVM_TRACKER_KEY")


def parse_rpc(spec: str | RPCSpec | None) -> RPCSpec | None:
    """Parse ``HOST:PORT:KEY``; with ``spec="env"`` read ``TVM_TRACKER_HOST/PORT/KEY``."""
    if spec is None or isinstance(spec, RPCSpec):
        return spec
    if spec == "env":
        values = [os.environ.get(name) for name in TRACKER_VARS]
        if not all(values):
            raise RemoteError(
                "--rpc env needs TVM_TRACKER_HOST, TVM_TRACKER_PORT and TVM_TRACKER_KEY set"
            )
        spec = ":".join(values)
    parts = spec.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[0] or not parts[2]:
        raise RemoteError(
            f"--rpc expects HOST:PORT:KEY (e.g. 127.0.0.1:9190:local), got {spec!r}",
            hint="the key is the one the RPC servers registered with (rpc_server --key)",
        )
    return RPCSpec(parts[0], int(parts[1]), parts[2])


def rpc_for(rpc: str | RPCSpec | None, target: Any) -> RPCSpec | None:
    """Where a module for ``target`` runs: ``rpc`` when given; else, for a GPU this machine
    lacks, the tracker ``TVM_TRACKER_HOST/PORT/KEY`` name when all three are set; else here."""
    spec = parse_rpc(rpc)
    named = all(os.environ.get(name) for name in TRACKER_VARS)
    if spec is None and named and is_gpu_target(target) and not gpu_present(target):
        return parse_rpc("env")
    return spec


def _tracker(host: str, port: int) -> tuple[Any, dict[str, Any]]:
    """A tracker session and its summary, or a ``RemoteError`` within seconds. The first call
    of a process warns that RPC is unauthenticated (every RPC use asks a tracker first)."""
    warn_insecure_rpc()
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
        tracker = tvm().rpc.connect_tracker(host, port)
        return tracker, tracker.summary()
    except Exception as err:  # noqa: BLE001 - TVM raises several types for a dead tracker
        raise RemoteError(
            f"cannot reach an RPC tracker at {host}:{port}: {error_reason(err)}",
            hint=TRACKER_HINT,
        ) from None


def list_devices(spec: str) -> list[dict[str, Any]]:
    """One dict per device key: ``key``, ``free``, ``pending`` (``spec`` is ``HOST:PORT[:KEY]``)."""
    parts = spec.split(":")
    if len(parts) < 2 or not parts[1].isdigit():
        raise RemoteError(f"expected HOST:PORT for the tracker, got {spec!r}")
    _, summary = _tracker(parts[0], int(parts[1]))
    out = []
    for key, info in sorted(summary.get("queue_info", {}).items()):
        if len(parts) > 2 and parts[2] and key != parts[2]:
            continue
        out.append({"key": key, "free": int(info["free"]), "pending": int(info["pending"])})
    return out


def check_key(spec: RPCSpec) -> dict[str, int]:
    """The tracker's queue for ``spec.key`` (``free`` and ``pending`` servers); a ``RemoteError``
    unless a server is registered under the key (a request nobody serves would wait forever)."""
    _, summary = _tracker(spec.host, spec.port)
    queues = summary.get("queue_info", {})
    keys = sorted(queues)
    if spec.key not in keys:
        raise RemoteError(
            f"no RPC server is registered under key {spec.key!r} at {spec.host}:{spec.port}"
            f" (registered: {', '.join(keys) or 'none'})",
            hint=SERVER_HINT,
        )
    return {name: int(count) for name, count in queues[spec.key].items()}


def registered_servers(spec: RPCSpec) -> tuple[set[tuple[str, int]], int]:
    """The addresses of the servers registered under ``spec.key`` (free or busy: a server
    leaves the list when its connection to the tracker drops) and how many are free now."""
    _, summary = _tracker(spec.host, spec.port)
    servers = {
        (str(info["addr"][0]), int(info["addr"][1]))
        for info in summary.get("server_info", [])
        if str(info.get("key", "")).split(":", 1)[-1] == spec.key
    }
    free = int(summary.get("queue_info", {}).get(spec.key, {}).get("free", 0))
    return servers, free


def free_devices(spec: RPCSpec) -> int:
    """How many servers under ``spec.key`` the tracker has free now (0 when all are busy);
    raises ``RemoteError`` when none is registered under the key."""
    return check_key(spec).get("free", 0)


@contextlib.contextmanager
def session(spec: RPCSpec, timeout_s: float = REQUEST_TIMEOUT_S) -> Iterator[Any]:
    """A session on a free server under ``spec.key``, released when the block ends."""
    check_key(spec)
    tracker, _ = _tracker(spec.host, spec.port)
    got: dict[str, Any] = {}

    def request() -> None:
        try:
            got["session"] = tracker.request(
                spec.key, priority=1, session_timeout=SESSION_TIMEOUT_S, max_retry=1
            )
        except Exception as err:  # noqa: BLE001 - reported below
            got["error"] = err

    worker = threading.Thread(target=request, name="mlc-rpc-request", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        tracker.close()  # unblocks the waiting request
        raise RemoteError(
            f"no server under key {spec.key!r} at {spec.host}:{spec.port} became free"
            f" within {timeout_s:.0f} s",
            hint="%mlc_devices HOST:PORT shows the free and pending servers",
        )
    if "error" in got:
        raise RemoteError(
            f"the tracker at {spec.host}:{spec.port} gave no session for {spec.key!r}:"
            f" {_server_reason(got['error'])}"
        )
    try:
        yield got["session"]
    finally:
        close_rpc_session(got.pop("session"))


def remote_device(sess: Any, spec: RPCSpec, kind: str) -> Any:
    """Device 0 of ``kind`` on the server, checked to exist there."""
    try:
        dev = sess.device(kind, 0)
        exists = bool(dev.exist)
    except Exception as err:  # noqa: BLE001 - the server's reason, first line
        raise RemoteError(
            f"the RPC server under {spec.key!r} cannot open a {kind} device: {_server_reason(err)}"
        ) from None
    if not exists:
        raise RemoteError(
            f"the RPC server under key {spec.key!r} at {spec.host}:{spec.port} has no {kind}"
            " device (TVM there finds none)",
            hint="check the key: %mlc_devices HOST:PORT; on the server, TVM must be built with"
            f" {kind} and see the device",
        )
    return dev


def remote_target(spec: RPCSpec, target: Any) -> Any:
    """``target`` completed from the remote device (GPU kinds: architecture and limits).

    Raises ``RemoteError`` when the server cannot be had or has no such device.
    """
    with session(spec) as sess:
        dev = remote_device(sess, spec, device_kind(target))
        return device_target(target, dev) if is_gpu_target(target) else resolve_target(target)


class RemoteModules:
    """Built modules loaded on one server, within one session (``with RemoteModules(spec)``)."""

    def __init__(self, spec: RPCSpec) -> None:
        self.spec = spec
        self._session: Any = None
        self._stack = contextlib.ExitStack()
        self._loaded: dict[str, Any] = {}
        self._tmp = ""

    def __enter__(self) -> RemoteModules:
        self._session = self._stack.enter_context(session(self.spec))
        self._tmp = self._stack.enter_context(tempfile.TemporaryDirectory(prefix="mlc-rpc-"))
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loaded.clear()
        self._session = None
        self._stack.close()

    def device(self, target: Any) -> Any:
        """The remote device a module built for ``target`` runs on."""
        return remote_device(self._session, self.spec, device_kind(target))

    def load(self, built: Any) -> Any:
        """``built``'s module on the server (exported, uploaded and loaded once per session)."""
        key = built.key or str(id(built))
        if key not in self._loaded:
            name = f"mod_{len(self._loaded)}.so"
            path = Path(self._tmp) / name
            built = in_memory(built)  # a library loaded from disk cannot be exported again
            try:
                built.executable.export_library(str(path))
            except Exception as err:  # noqa: BLE001 - the linker's reason, one line
                raise BuildError(
                    f"cannot export the module for the RPC server: {error_reason(err)}"
                ) from None
            try:
                self._session.upload(str(path))
                self._loaded[key] = self._session.load_module(name)
            except Exception as err:  # noqa: BLE001 - the server's reason, last line
                raise RemoteError(
                    f"the RPC server under {self.spec.key!r} cannot load the module:"
                    f" {_server_reason(err)}",
                    hint=_load_hint(str(err)),
                ) from None
        return self._loaded[key]


def _server_reason(err: BaseException) -> str:
    """The reason in an error that crossed RPC (the server's message, not the relay's)."""
    return error_reason(str(err).split("Error caught from RPC call:", 1)[-1])


def _load_hint(text: str) -> str:
    if "load_from_bytes.cuda" in text:
        return "TVM on the server has no CUDA runtime: build it with CUDA, on a machine with a GPU"
    if "cuda-bindings" in text or "NVRTC" in text:
        return (
            "the server compiles CUDA kernels when it loads them: install cuda-bindings there,"
            " or set TVM_CUDA_COMPILE_MODE=nvcc"
        )
    return ""

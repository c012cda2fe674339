"""Builds on disk, so that the first build after a kernel restart is a cache hit.

An entry is a folder ``<cache>/builds/<digest of the key>/`` holding the shared library (a
Relax build's kernels only), a Relax build's VM (its bytecode and constants, as TVM serializes
them: packed into the library, a model's weights made its object and its link the slowest part
of a store), the module it was built from (TVM's JSON, to check structural equality on a hit;
its weights as their SHA-256, :func:`~mlc_jupyter.tvm_compat.constants_as_digests`) and
``meta.json`` (the key and a SHA-256 of each file). It is written in a staging folder and
renamed into place in one step, so a reader sees a whole entry or none, and two kernels writing
the same entry at once leave one. An entry whose files do not match their checksums, or that
does not load, is removed and rebuilt, never loaded. The objects are emitted (each of TVM's LLVM
modules by a thread of its own: a module is not safe to share across threads) and linked before
the build returns, and the build then runs from that library, so its first call compiles
nothing again; the module's JSON and the VM (a model's weights make it large) are written in
the background. The folder is kept under a size limit by dropping the least recently used
entries. A build runs from a copy of its library in a folder of the process's own, fresh or
loaded from an entry, so clearing or evicting the entry (from any process) never touches a
library a running kernel has loaded.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ..config import build_cache_dir, build_cache_limit_bytes
from ..tvm_compat import (
    constants_as_digests,
    export_objects,
    link_shared,
    load_executable,
    load_json,
    save_json,
    structural_equal,
    with_kernels,
    write_vm,
)

_META = "meta.json"
_MODULE = "module.json"
_VM = "vm.bin"
#: Staging folders older than this were left by a kernel that died while writing.
_STALE_S = 3600.0
#: Format of an entry; a change makes older entries misses.
_FORMAT = 2

_pending: list[threading.Thread] = []
_lock = threading.Lock()


def _entry(key: str) -> Path:
    return build_cache_dir() / hashlib.sha256(f"{_FORMAT}|{key}".encode()).hexdigest()[:40]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load(key: str, mod: Any, relax: bool) -> tuple[Any, float, str] | None:
    """``(executable, original build seconds, library)`` of the entry for ``key``, or ``None``;
    the executable runs from ``library``, a private copy of the entry's (an isolated build's
    worker loads that same file).

    A damaged entry (a file that does not match its checksum, JSON that does not parse, a
    library that does not load, another module under the same key) is removed.
    """
    entry = _entry(key)
    meta_path = entry / _META
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        files, library, vm = meta["files"], meta["library"], meta.get("vm")
        others = {f: d for f, d in files.items() if f not in (library, vm)}
        if meta.get("key") != key or any(_digest(entry / f) != d for f, d in others.items()):
            raise ValueError("checksum")
        stored = load_json((entry / _MODULE).read_text())
        if not structural_equal(stored, constants_as_digests(mod)):
            return None  # another module under the same hash: build, keep the entry
        copy = _private_copy(entry / library)
        if _digest(Path(copy)) != files[library]:  # the copy is what runs: check that
            Path(copy).unlink(missing_ok=True)
            raise ValueError("checksum")
        vm_bytes = (entry / vm).read_bytes() if vm else None  # checked as read: what loads
        if vm_bytes is not None and hashlib.sha256(vm_bytes).hexdigest() != files[vm]:
            raise ValueError("checksum")
        executable = load_executable(copy, relax, vm_bytes)
    except Exception:  # noqa: BLE001 - any damage means: drop it and build again
        _remove(entry)
        return None
    with contextlib.suppress(OSError):  # recently used (unless another kernel evicted it since)
        os.utime(meta_path)
    return executable, float(meta.get("build_s", 0.0)), copy


def store(
    key: str, mod: Any, executable: Any, build_s: float, relax: bool = False
) -> tuple[Any, str] | None:
    """Write the entry for ``key``: objects emitted and linked now, the rest in the background.

    Returns the build loaded from the library just linked and the path of the private copy it
    runs from (``None`` when it could not be written): emitting the objects is LLVM's code
    generation, and the in-memory build would do it once more, as a JIT compile, on its first
    call. The module's text (for the equality check of a later hit) and a Relax build's VM are
    written in the background; the library holds the VM's kernels only, which the VM in memory
    then runs.
    """
    root = build_cache_dir()
    staging = root / f".staging-{uuid.uuid4().hex}"
    staging.mkdir(parents=True)
    linked: dict[str, Any] = {"output": str(staging / "lib.so"), "options": {}}

    def record(output: str, objects: list[str], **options: Any) -> None:
        linked.update(output=output, objects=list(objects), options=options)

    try:  # a Relax build's kernels only, its VM written on its own (in the background)
        objects = export_objects(executable, str(staging), pack_vm=False) if relax else None
        split_vm = objects is not None
        if objects is None:
            objects = export_objects(executable, str(staging))  # in parallel, LLVM's modules
        if objects is not None:
            linked["objects"] = objects
        else:
            executable.export_library(
                str(staging / "lib.so"), fcompile=record, workspace_dir=str(staging)
            )
        link_shared(linked["output"], linked["objects"], linked["options"].get("options"))
        library = staging / "lib.so"
        name = f"lib-{_digest(library)[:16]}.so"  # a new name per content: dlopen caches by path
        library.rename(staging / name)
        for obj in linked["objects"]:
            Path(obj).unlink(missing_ok=True)
        copy = _private_copy(staging / name)
        loaded = with_kernels(executable, copy) if split_vm else load_executable(copy, relax)
    except Exception:  # noqa: BLE001 - no compiler, full disk: the build stays in memory only
        shutil.rmtree(staging, ignore_errors=True)
        return None
    thread = threading.Thread(
        target=_finish, args=(key, mod, staging, name, build_s, loaded if split_vm else None),
        name="mlc-build-cache", daemon=True,
    )  # fmt: skip
    with _lock:
        _pending[:] = [t for t in _pending if t.is_alive()]
        _pending.append(thread)
    thread.start()
    return loaded, copy


_private: list[Path] = []


def _private_copy(library: Path) -> str:
    """A copy of ``library`` in a folder of this process's own (removed at exit), for it to run
    from, fresh build or cache hit: the entry's folder is renamed into place and may be cleared
    or evicted by another kernel while the library is loaded, and the dynamic loader crashed at
    exit over libraries loaded that way."""
    with _lock:
        if not _private:
            _private.append(Path(tempfile.mkdtemp(prefix="mlc-builds-")))
            atexit.register(shutil.rmtree, _private[0], True)
    copy = _private[0] / f"{library.stem}-{uuid.uuid4().hex[:8]}{library.suffix}"
    shutil.copyfile(library, copy)
    return str(copy)


def _finish(key: str, mod: Any, staging: Path, name: str, build_s: float, vm: Any = None) -> None:
    """Write the module's text and ``vm`` (a Relax build's VM, when its library holds the
    kernels only), checksum, rename into place, then keep the folder under its limit."""
    try:
        (staging / _MODULE).write_text(save_json(constants_as_digests(mod)))
        if vm is not None:
            write_vm(vm, str(staging / _VM))
        names = (name, _MODULE, _VM) if vm is not None else (name, _MODULE)
        files = {n: _digest(staging / n) for n in names}
        meta = {"key": key, "library": name, "files": files, "build_s": build_s,
                "created": time.time(), "vm": _VM if vm is not None else None}  # fmt: skip
        (staging / _META).write_text(json.dumps(meta))
        _commit(staging, _entry(key))
    except Exception:  # noqa: BLE001 - a full disk: the build stays in memory only
        shutil.rmtree(staging, ignore_errors=True)
        return
    evict(build_cache_limit_bytes())


def _commit(staging: Path, entry: Path) -> None:
    """Rename ``staging`` to ``entry`` in one step; an entry written meanwhile is replaced."""
    try:
        staging.rename(entry)
        return
    except OSError:
        pass
    _remove(entry)
    try:
        staging.rename(entry)
    except OSError:  # another kernel put its copy there first: keep that one
        shutil.rmtree(staging, ignore_errors=True)


def _remove(entry: Path) -> bool:
    """Take ``entry`` out of use in one step (rename), then delete it; False when another
    kernel took it first."""
    trash = entry.with_name(f".trash-{uuid.uuid4().hex}")
    try:
        entry.rename(trash)
    except OSError:
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def evict(limit_bytes: int) -> None:
    """Drop the least recently used entries until the folder holds at most ``limit_bytes``;
    also staging folders left by a kernel that died while writing."""
    root = build_cache_dir()
    entries = []
    for path in root.iterdir():
        try:
            if path.name.startswith(".staging-"):
                if time.time() - path.stat().st_mtime > _STALE_S:
                    shutil.rmtree(path, ignore_errors=True)
                continue
            if path.name.startswith(".trash-"):
                shutil.rmtree(path, ignore_errors=True)
                continue
            used = (path / _META).stat().st_mtime if (path / _META).exists() else 0.0
            entries.append((used, _size(path), path))
        except OSError:  # removed by another kernel meanwhile
            continue
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit_bytes:
            break
        _remove(path)
        total -= size


def entries() -> list[tuple[Path, int]]:
    """Each whole entry (a staging folder is not one yet) and its bytes."""
    found = []
    for path in build_cache_dir().iterdir():
        if path.name.startswith(".") or not (path / _META).exists():
            continue
        with contextlib.suppress(OSError):  # removed by another kernel meanwhile
            found.append((path, _size(path)))
    return found


def clear() -> tuple[int, int]:
    """Remove every entry (``(count, bytes)``), each in one rename: another kernel loading one
    then finds none and builds again, and one that loaded it keeps running (the library stays
    mapped). A staging folder another kernel is writing is left to it."""
    flush()
    count = size = 0
    for path, bytes_ in entries():
        if _remove(path):
            count, size = count + 1, size + bytes_
    evict(build_cache_limit_bytes())  # trash and staging left by kernels that died
    return count, size


def flush(timeout_s: float | None = None) -> None:
    """Wait until every entry written so far is on disk (tests; a kernel's orderly exit)."""
    with _lock:
        threads = list(_pending)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    for thread in threads:
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))


atexit.register(flush, 10.0)

"""What the package keeps in its cache folder, and clearing it without losing anyone's work.

Like ``pip cache info`` / ``pip cache purge`` and ``ccache -s`` / ``-C``: :func:`cache_info`
lists each part (builds on disk, tuning work dirs, course kernels, native logs, this kernel's
builds in memory) with its folder, size and count; :func:`clear_caches` clears one part or all.

Clearing is safe while other notebooks use the cache. A build is taken out of use in one rename
(a kernel loading it then builds again, and one that loaded it keeps running: the library is
mapped). A log of a kernel that still runs is kept. Tuning work dirs hold what a user searched
for hours, so only ``"tune"`` named on its own clears them, never ``"all"``; a work dir another
run is tuning into (its ``.lock`` held) is skipped and named, and one cleared keeps its lock file,
so a run waiting for it finds the dir where it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .compilation import clear_cache, disk_cache
from .compilation.cached_build import memory_cache
from .compilation.memory_cache import memory_cache_limit_bytes
from .config import build_cache_dir, build_cache_limit_bytes, cache_dir, cache_root
from .errors import TuneError
from .tune.records import RECORDS_FILE
from .tune.work_lock import LOCK_FILE, hold_work_dir, holder, in_use

#: The parts :func:`clear_caches` clears, in the order :func:`cache_info` lists them.
PARTS = ("builds", "tune", "kernels", "logs", "memory")
#: What ``"all"`` clears: everything but the tuning records, which only ``"tune"`` clears.
ALL_PARTS = ("builds", "kernels", "logs", "memory")
#: The prefix of the file each kernel's native stderr goes to while a magic runs.
LOG_PREFIX = "magic-stderr-"


@dataclass(frozen=True)
class CachePart:
    """One part of the cache: its folder, bytes on disk (in memory for ``memory``) and count."""

    name: str
    path: str
    size_bytes: int
    count: int
    unit: str
    note: str = ""


@dataclass(frozen=True)
class CacheInfo:
    """Where the cache lives, who says so, and each part."""

    root: str
    configured_by: str
    parts: tuple[CachePart, ...]

    @property
    def size_bytes(self) -> int:
        """Bytes on disk (the in-memory builds not counted)."""
        return sum(p.size_bytes for p in self.parts if p.name != "memory")


@dataclass(frozen=True)
class CacheCleared:
    """What one :func:`clear_caches` call removed, freed and kept (each kept item with why)."""

    parts: tuple[str, ...]
    removed: dict[str, int]
    freed_bytes: int
    records_removed: int
    kept: tuple[str, ...]


def native_log_file(folder: Path, pid: int) -> Path:
    """The file a kernel of process ``pid`` sends native stderr to while a magic runs."""
    return folder / f"{LOG_PREFIX}{pid}.log"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _logs(folder: Path) -> list[tuple[Path, int | None]]:
    """Each native log in ``folder`` and the pid it belongs to (``None`` when unnamed)."""
    found = []
    for log in folder.glob(f"{LOG_PREFIX}*.log"):
        pid = log.stem.rsplit("-", 1)[-1]
        found.append((log, int(pid) if pid.isdigit() else None))
    return found


def sweep_logs(folder: Path, keep_s: float) -> int:
    """Delete the native logs of processes that are gone and that were last written more than
    ``keep_s`` ago; the number deleted."""
    removed = 0
    for log, pid in _logs(folder):
        try:
            old = time.time() - log.stat().st_mtime > keep_s
            if old and pid is not None and not _running(pid):
                log.unlink()
                removed += 1
        except OSError:  # swept by another kernel meanwhile
            continue
    return removed


def _size(path: Path) -> int:
    total = 0
    for f in path.rglob("*") if path.is_dir() else ():
        with contextlib.suppress(OSError):  # removed by another kernel meanwhile
            total += f.stat().st_size if f.is_file() else 0
    return total


def _records(work: Path) -> int:
    """Tuning records in a work dir (one JSON line each), those ``--fresh`` moved aside too."""
    count = 0
    for records in work.rglob(RECORDS_FILE):
        with contextlib.suppress(OSError), records.open("rb") as file:
            count += sum(1 for line in file if line.strip())
    return count


def _work_dirs(root: Path) -> list[Path]:
    """The work dirs under ``root``: a kernel's (its database) or a whole model's (the list of
    its kernels' dirs)."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink())


@contextlib.contextmanager
def _held_unless_in_use(work: Path) -> Iterator[str | None]:
    """Hold ``work``'s lock while the block runs, yielding ``None``; when a tuning run (of this
    kernel or another) holds it, hold nothing and yield who does."""
    who = in_use(work)
    if who is not None:
        yield who
        return
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(hold_work_dir(work, wait=False))
        except TuneError:  # a run took it just now
            yield holder(work)
            return
        yield None


def cache_info() -> CacheInfo:
    """Each part of the cache: where, how large, how many (like ``pip cache info``)."""
    if os.environ.get("MLC_JUPYTER_CACHE"):
        by = "MLC_JUPYTER_CACHE"
    elif os.environ.get("XDG_CACHE_HOME"):
        by = "XDG_CACHE_HOME (set MLC_JUPYTER_CACHE to move it)"
    else:
        by = "the default (set MLC_JUPYTER_CACHE to move it)"
    root = cache_dir()
    disk_cache.flush()
    builds = build_cache_dir()
    entries = disk_cache.entries()
    tune = root / "tune"
    dirs = _work_dirs(tune)
    records = sum(_records(d) for d in dirs)
    kernels = root / "course" / "kernels"
    libraries = list(kernels.glob("kernel-*.so")) if kernels.is_dir() else []
    logs = _logs(root)
    live = sum(1 for _, pid in logs if pid is not None and _running(pid))
    memory = memory_cache()
    limit_mb = build_cache_limit_bytes() / 2**20
    parts = (
        CachePart("builds", str(builds), sum(s for _, s in entries), len(entries), "builds",
                  f"kept under {limit_mb:g} MB, MLC_JUPYTER_BUILD_CACHE_MB"),
        CachePart("tune", str(tune), _size(tune), len(dirs), "work dirs",
                  f"{records} tuning records, cleared only by --clear tune"),
        CachePart("kernels", str(kernels), _size(kernels), len(libraries), "course kernels"),
        CachePart("logs", str(root), sum(_file_size(p) for p, _ in logs), len(logs), "logs",
                  f"{live} of running kernels" if live else ""),
        CachePart("memory", "this kernel", memory.bytes, len(memory), "builds",
                  f"kept under {memory_cache_limit_bytes() / 2**20:g} MB, "
                  "MLC_JUPYTER_MEMORY_CACHE_MB"),
    )  # fmt: skip
    if root != cache_root():  # a private stand-in: the configured folder is not the user's own
        by += f"; {cache_root()} is not used (see the CacheWarning)"
    return CacheInfo(str(root), by, parts)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def clear_caches(part: str = "all") -> CacheCleared:
    """Clear ``part`` (one of :data:`PARTS`, or ``"all"``: every part but ``"tune"``).

    A build another kernel loads is rebuilt there, a log of a running kernel is kept, a work dir
    a tuning run holds is kept and named; only ``"tune"`` named on its own removes tuning records.
    """
    if part == "all":
        parts = ALL_PARTS
    elif part in PARTS:
        parts = (part,)
    else:
        raise ValueError(
            f"no cache part {part!r}: clear one of {', '.join(PARTS)}, or all (every part but "
            "tune, whose records only --clear tune removes)"
        )
    root = cache_dir()
    removed: dict[str, int] = {}
    freed, records, kept = 0, 0, []
    if "memory" in parts:
        memory = memory_cache()
        removed["memory"], freed = len(memory), freed + memory.bytes
        clear_cache(disk=False)
    if "builds" in parts:
        count, size = disk_cache.clear()
        removed["builds"], freed = count, freed + size
    if "kernels" in parts:
        count = 0
        kernels = root / "course" / "kernels"
        for path in list(kernels.glob("kernel-*")) if kernels.is_dir() else ():
            size = _file_size(path)
            with contextlib.suppress(OSError):  # removed by another kernel meanwhile
                path.unlink()
                count += path.suffix == ".so"
                freed += size
        removed["kernels"] = count
    if "logs" in parts:
        count = 0
        for log, pid in _logs(root):
            if pid is not None and _running(pid):
                kept.append(f"{log.name}: the log of running kernel {pid}")
                continue
            size = _file_size(log)
            with contextlib.suppress(OSError):
                log.unlink()
                count, freed = count + 1, freed + size
        removed["logs"] = count
    if "tune" in parts:
        count = 0
        for work in _work_dirs(root / "tune"):
            with _held_unless_in_use(work) as holder:
                if holder is not None:
                    kept.append(f"{work}: in use by {holder}")
                    continue
                held = _records(work)
                size = _size(work)
                for item in work.iterdir():
                    if item.name == LOCK_FILE:
                        continue  # a run waiting on it finds it where it was
                    if item.is_dir() and not item.is_symlink():
                        shutil.rmtree(item, ignore_errors=True)
                    else:
                        with contextlib.suppress(OSError):
                            item.unlink()
                count, records, freed = count + 1, records + held, freed + size
        removed["tune"] = count
    return CacheCleared(parts, removed, freed, records, tuple(kept))

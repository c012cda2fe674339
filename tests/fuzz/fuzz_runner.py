"""Run mutations in batches of subprocess workers and count what happened, crashes included.

Each batch runs in a fresh ``fuzz_worker.py`` process (a real IPython shell). A worker that dies
(a signal, an abort in TVM's C++ code) or stops answering is a *crash* or a *hang* of the
mutation it had started; the rest of its batch goes to a new worker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
#: The longest error a user should have to read (lines).
MAX_ERROR_LINES = 25


@dataclass
class Summary:
    """What a fuzz run found."""

    outcomes: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def stage(self, name: str) -> list[dict[str, Any]]:
        return [o for o in self.outcomes if o["stage"] == name]

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [o for o in self.outcomes if "lines" in o]

    @property
    def crashes(self) -> list[dict[str, Any]]:
        return self.stage("crash") + self.stage("hang")

    @property
    def too_long(self) -> list[dict[str, Any]]:
        return [o for o in self.errors if o["lines"] > MAX_ERROR_LINES]

    @property
    def not_located(self) -> list[dict[str, Any]]:
        return [o for o in self.errors if not o["located"]]

    def report(self, examples: int = 3) -> str:
        """The figures, then a few examples of what fell short."""
        errors = self.errors
        rows = [
            ("mutations", len(self.outcomes)),
            ("cell errors (parse, schedule)", len(self.stage("cell"))),
            ("build errors", len(self.stage("build"))),
            ("run errors", len(self.stage("run"))),
            ("built and ran", len(self.stage("ran"))),
            ("built, too big to run", len(self.stage("built"))),
            ("crashes", len(self.stage("crash"))),
            ("hangs", len(self.stage("hang"))),
            ("errors located at a cell line", f"{len(errors) - len(self.not_located)} of {len(errors)}"),
            (f"errors over {MAX_ERROR_LINES} lines", len(self.too_long)),
            ("max error length (lines)", max((o["lines"] for o in errors), default=0)),
            ("raw tracebacks", sum(1 for o in errors if o.get("raw"))),
            ("seconds", round(self.seconds, 1)),
        ]  # fmt: skip
        out = [f"{name:32} {value}" for name, value in rows]
        kinds = Counter(o["kind"] for o in self.outcomes)
        out.append("kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        for title, bad in (
            ("crash", self.crashes),
            ("too long", self.too_long),
            ("not located", self.not_located),
        ):
            for o in bad[:examples]:
                first = (o.get("text") or o.get("stderr") or "").strip().splitlines()[:3]
                out.append(f"[{title}] seed {o['seed']} {o['case']} {o['kind']} ({o['edit']}): "
                           + " / ".join(first))  # fmt: skip
        return "\n".join(out)


def _read(path: Path) -> tuple[list[dict[str, Any]], int | None]:
    """Finished outcomes, and the seed of a mutation started but not finished."""
    done, started = [], None
    if not path.exists():
        return done, started
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if "started" in record:
            started = record["started"]
        else:
            done.append(record)
            started = None
    return done, started


def _batch(
    seeds: list[int], env: dict[str, str], timeout_s: float
) -> tuple[list[dict[str, Any]], list[int]]:
    """Run ``seeds`` in one worker: the outcomes, and the seeds it never reached."""
    from fuzz_mutations import mutation

    with tempfile.TemporaryDirectory(prefix="mlc-fuzz-") as tmp:
        seeds_path, results_path = Path(tmp) / "seeds.json", Path(tmp) / "results.jsonl"
        seeds_path.write_text(json.dumps(seeds))
        worker = subprocess.Popen(
            [sys.executable, str(HERE / "fuzz_worker.py"), str(seeds_path), str(results_path)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        last_size, last_change = -1, time.monotonic()
        hung = False
        while worker.poll() is None:
            size = results_path.stat().st_size if results_path.exists() else 0
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > timeout_s:
                worker.kill()
                hung = True
            time.sleep(0.1)
        stderr = worker.stderr.read() if worker.stderr else ""
        done, started = _read(results_path)
    finished = {o["seed"] for o in done}
    if started is not None:
        found = mutation(started)
        done.append({
            "seed": started, "case": found.case, "kind": found.kind, "edit": found.edit,
            "line": found.line, "stage": "hang" if hung else "crash",
            "returncode": worker.returncode, "stderr": stderr[-2000:],
        })  # fmt: skip
        finished.add(started)
    elif worker.returncode != 0 and not done:
        raise RuntimeError(f"the fuzz worker failed before any mutation:\n{stderr[-3000:]}")
    return done, [s for s in seeds if s not in finished]


def run(seeds: list[int], batch: int = 50, timeout_s: float = 180.0, **env: str) -> Summary:
    """Run every seed's mutation, ``batch`` per worker process; ``env`` adds to the workers'."""
    started = time.perf_counter()
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    base = {**os.environ, "PYTHONPATH": path, **env}
    summary = Summary()
    pending = list(seeds)
    with tempfile.TemporaryDirectory(prefix="mlc-fuzz-cache-") as cache:
        base.setdefault("MLC_JUPYTER_CACHE", cache)
        while pending:
            done, rest = _batch(pending[:batch], base, timeout_s)
            summary.outcomes.extend(done)
            pending = rest + pending[batch:]
    summary.seconds = time.perf_counter() - started
    return summary

"""Measuring candidates on devices behind a TVM RPC tracker (``%mlc_tune --rpc``).

The spec, sessions, the device query and the device list are shared with building and timing:
:mod:`mlc_jupyter.compilation.remote`. Importing this module does not import TVM.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from ..compilation.remote import (
    RPCSpec,
    list_devices,
    parse_rpc,
    registered_servers,
    rpc_for,
)
from ..errors import RemoteError
from ..tvm_compat import derived_object, metaschedule

__all__ = [
    "RPCServers",
    "RPCSpec",
    "list_devices",
    "make_rpc_runner",
    "parse_rpc",
    "rpc_for",
]


@dataclass
class RPCServers:
    """The servers under a key as a tune saw them, read again before each round: how many
    measured at once at most, and how many left the tracker during the run (a server that
    died, or was stopped)."""

    spec: RPCSpec
    seen: set[tuple[str, int]] = field(default_factory=set)
    registered: set[tuple[str, int]] = field(default_factory=set)
    #: the most runner workers (devices measuring at once) of any round
    most_at_once: int = 0

    def refresh(self) -> int:
        """Read the tracker again; returns how many servers are free now (0 when the tracker
        cannot be reached: the round then waits on the workers it has)."""
        try:
            self.registered, free = registered_servers(self.spec)
        except RemoteError:
            return 0
        self.seen |= self.registered
        return free

    @property
    def lost(self) -> int:
        """Servers seen during the run that are no longer registered."""
        return len(self.seen - self.registered)


def make_rpc_runner(spec: RPCSpec) -> tuple[Any, RPCServers]:
    """A MetaSchedule runner for the devices registered with a tracker under ``spec.key``, and
    what it learns about them.

    Each round first reads the tracker again and measures on one worker per server free then
    (at least one, which waits its turn when all are busy), so a round's candidates are measured
    on every free device in parallel and never two at once on one device; a server added during
    the run is used from the next round on. A server that dies mid-round fails the candidate it
    was measuring (the connection breaks); the tracker drops it and the round's other candidates,
    and the rounds after, go to the servers left.
    """
    servers = RPCServers(spec)
    return _round_runner_class()(servers), servers


def _rpc_runner(spec: RPCSpec, workers: int) -> Any:
    ms = metaschedule()
    config = ms.runner.RPCConfig(
        tracker_host=spec.host, tracker_port=spec.port, tracker_key=spec.key,
        session_timeout_sec=60,
    )  # fmt: skip
    evaluator = ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=50)
    return ms.runner.RPCRunner(config, evaluator, max_workers=workers)


@functools.cache
def _round_runner_class() -> type:
    """The runner class, made on first use (a TVM-derived class needs TVM imported)."""
    ms = metaschedule()

    @derived_object
    class RoundRunner(ms.runner.PyRunner):
        """MetaSchedule's ``RPCRunner``, with as many workers as servers are free at each
        round's start (grown, never shrunk: a spare worker only waits for a server)."""

        def __init__(self, servers: RPCServers) -> None:
            super().__init__()
            self.servers = servers
            self.runner: Any = None
            self.workers = 0

        def run(self, runner_inputs: list[Any]) -> list[Any]:
            workers = max(1, self.servers.refresh())
            if self.runner is None or workers > self.workers:
                self.runner, self.workers = _rpc_runner(self.servers.spec, workers), workers
            self.servers.most_at_once = max(self.servers.most_at_once, self.workers)
            return self.runner.run(runner_inputs)

    return RoundRunner

"""Measuring candidates on devices behind a TVM RPC tracker (``%mlc_tune --rpc``).

The spec, sessions, the device query and the device list are shared with building and timing:
:mod:`mlc_jupyter.compilation.remote`. Importing this module does not import TVM.
"""

from __future__ import annotations

from typing import Any

from ..compilation.remote import RPCSpec, free_devices, list_devices, parse_rpc, rpc_for
from ..tvm_compat import metaschedule

__all__ = ["RPCSpec", "list_devices", "make_rpc_runner", "parse_rpc", "rpc_for"]


def make_rpc_runner(spec: RPCSpec) -> tuple[Any, int]:
    """MetaSchedule's RPC runner for the devices registered with a tracker under ``spec.key``,
    and how many it measures on at once: one worker per server the tracker has free under the
    key now (at least one, which waits its turn when all are busy), so a round's candidates are
    measured on every free device in parallel and never two at once on one device."""
    workers = max(1, free_devices(spec))
    ms = metaschedule()
    config = ms.runner.RPCConfig(
        tracker_host=spec.host, tracker_port=spec.port, tracker_key=spec.key,
        session_timeout_sec=60,
    )  # fmt: skip
    evaluator = ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=50)
    return ms.runner.RPCRunner(config, evaluator, max_workers=workers), workers

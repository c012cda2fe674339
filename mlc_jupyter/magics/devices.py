"""``%mlc_devices``: the devices an RPC tracker offers for measuring (``%mlc_tune --rpc``)."""

from __future__ import annotations

import os
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ..tune import list_devices


@magics_class
class DeviceMagics(Magics):
    """RPC devices for tuning."""

    @magic_arguments()
    @argument("tracker", nargs="?", default=None, help="HOST:PORT (default: TVM_TRACKER_HOST/PORT)")
    @line_magic
    def mlc_devices(self, line: str) -> None:
        """List the device keys an RPC tracker knows, with free and pending counts."""
        args = parse_argstring(self.mlc_devices, line)
        spec = args.tracker
        if spec is None:
            host, port = os.environ.get("TVM_TRACKER_HOST"), os.environ.get("TVM_TRACKER_PORT")
            if not (host and port):
                raise UsageError("%mlc_devices needs HOST:PORT or TVM_TRACKER_HOST/PORT set")
            spec = f"{host}:{port}"
        devices = list_devices(spec)
        if not devices:
            print(f"tracker {spec}: no devices registered")
        for dev in devices:
            print(f"{dev['key']:<20} free {dev['free']:>3}  pending {dev['pending']:>3}")


def register(ipython: Any) -> None:
    """Register ``%mlc_devices``."""
    ipython.register_magics(DeviceMagics)

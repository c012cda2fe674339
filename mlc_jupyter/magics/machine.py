"""``%mlc_machine``: this machine's fp32 peak and memory bandwidth, measured once and cached."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..compilation import is_gpu_target
from ..display.roofline import limits_bundle
from ..measure.gpu_limits import gpu_limits
from ..measure.machine import machine_limits


@magics_class
class MachineMagics(Magics):
    """The limits ``%mlc_time`` and ``%mlc_tune`` measure kernels against."""

    @magic_arguments()
    @argument("--refresh", action="store_true", help="measure again and replace the cached figures")
    @argument(
        "--target",
        "-t",
        default=None,
        help="cuda: the local GPU's fp32 peak, tensor-core peak and memory bandwidth",
    )
    @argument("-o", dest="output", action="store_true", help="return the MachineLimits")
    @line_magic
    def mlc_machine(self, line: str) -> Any:
        """Show this machine's fp32 peak (per core count and vector width), memory bandwidth and
        roofline; measured the first time (about a second), then read from the cache file.
        With --target cuda: the local GPU's fp32 FMA peak, tensor-core peak and bandwidth."""
        args = parse_argstring(self.mlc_machine, line)
        if args.target is not None and is_gpu_target(args.target):
            limits = gpu_limits(args.target, refresh=args.refresh)
        else:
            limits = machine_limits(refresh=args.refresh)
        if args.output:
            return limits
        display(limits_bundle(limits), raw=True)
        return None


def register(ipython: Any) -> None:
    """Register ``%mlc_machine``."""
    ipython.register_magics(MachineMagics)

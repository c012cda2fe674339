"""``%mlc_cache``: where the cache lives, each part's size, and clearing a part."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..caches import ALL_PARTS, PARTS, cache_info, clear_caches


@magics_class
class CacheMagics(Magics):
    """See and clear what the package keeps, as ``pip cache`` and ``ccache -s``/``-C`` do."""

    @magic_arguments()
    @argument(
        "--clear",
        metavar="PART",
        choices=[*PARTS, "all"],
        default=None,
        help=f"clear one of {', '.join(PARTS)}, or all ({', '.join(ALL_PARTS)}: tuning records "
        "only when tune is named); builds another kernel is loading are rebuilt there, logs "
        "of running kernels and work dirs a run is tuning into are kept and named",
    )
    @argument("-o", dest="output", action="store_true", help="return the CacheInfo / CacheCleared")
    @line_magic
    def mlc_cache(self, line: str) -> Any:
        """Show where the cache lives (MLC_JUPYTER_CACHE moves it) and each part's folder, size
        and count: builds on disk, tuning work dirs (and their records), course kernels, native
        logs, this kernel's builds in memory. --clear PART clears one."""
        args = parse_argstring(self.mlc_cache, line)
        result = cache_info() if args.clear is None else clear_caches(args.clear)
        if args.output:
            return result
        display(result)
        return None


def register(ipython: Any) -> None:
    """Register ``%mlc_cache``."""
    ipython.register_magics(CacheMagics)

"""``time_evaluator`` as the book used it: TVM's own timer, run on the caller's arrays.

The book times a function with ``lib.time_evaluator("main", tvm.cpu())(a_nd, b_nd, c_nd)`` and
reads the outputs afterwards (chapter 4's random search leaves its product in ``c_nd``), so the
course timer calls the function on the arguments it is given, as TVM's does. The numbers mean
what they meant: one warm-up call, then ``repeat`` samples of ``number`` calls each (``.results``
holds ``repeat`` entries, each the mean of its ``number`` calls); ``min_repeat_ms`` raises
``number`` until a sample lasts that long. The defaults are the old API's (``number=10,
repeat=1, min_repeat_ms=0``). Where such sampling is thin, the printed summary says once how
``%mlc_time`` samples instead; the numbers themselves are never changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..measure.timer import DEFAULT_MIN_REPEAT_MS, DEFAULT_SAMPLING
from ..tvm_compat import benchmark_result_type

#: ``time_evaluator``'s defaults in the book's TVM (and still in 0.27's).
OLD_DEFAULTS = {"number": 10, "repeat": 1, "min_repeat_ms": 0}

#: Prepares the caller's arguments: the tensors to time with, and what to run afterwards.
Arguments = Callable[[tuple[Any, ...]], tuple[list[Any], Callable[[], None]]]


class CourseBenchmark(benchmark_result_type()):  # type: ignore[misc]
    """TVM's ``BenchmarkResult`` (``mean``, ``median``, ``min``, ``max``, ``std``, ``results``
    in seconds; this is a subclass) whose printed summary adds one line where ``%mlc_time``
    would sample better."""

    def __init__(
        self, results: Sequence[float], number: int, repeat: int, min_repeat_ms: float
    ) -> None:
        super().__init__(results)
        self.number = number
        self.repeat = repeat
        self.min_repeat_ms = min_repeat_ms

    @property
    def note(self) -> str:
        """How ``%mlc_time`` would sample, when this sampling is thinner ("" otherwise)."""
        default = DEFAULT_SAMPLING
        sample_ms = max(float(self.mean) * self.number * 1e3, self.min_repeat_ms)
        if self.repeat >= default.repeat and sample_ms >= DEFAULT_MIN_REPEAT_MS:
            return ""
        calls = f"{self.number} call{'s' if self.number != 1 else ''}"
        if self.min_repeat_ms:
            calls = f"at least {self.min_repeat_ms:g} ms"
        samples = f"{self.repeat} sample{'s' if self.repeat != 1 else ''}"
        return (
            f"note: {samples} of {calls}, as time_evaluator's number/repeat say; %mlc_time "
            f"calibrates {default.repeat} samples of at least {DEFAULT_MIN_REPEAT_MS:g} ms each, "
            "a steadier figure on a busy machine"
        )

    def __str__(self) -> str:
        summary = super().__str__().rstrip()
        note = self.note
        return f"{summary}\n{note}" if note else summary


def evaluator(
    module: Any,
    symbol: str,
    device: Any,
    arguments: Arguments,
    number: int = OLD_DEFAULTS["number"],
    repeat: int = OLD_DEFAULTS["repeat"],
    min_repeat_ms: float = OLD_DEFAULTS["min_repeat_ms"],
    **options: Any,
) -> Callable[..., CourseBenchmark]:
    """TVM's ``module.time_evaluator(symbol, device, ...)`` over the caller's arguments
    (``arguments`` turns them into tensors; its second result runs after the timing)."""
    timer = module.time_evaluator(
        symbol,
        device,
        number=int(number),
        repeat=int(repeat),
        min_repeat_ms=int(min_repeat_ms),
        **options,
    )

    def time(*args: Any) -> CourseBenchmark:
        tensors, after = arguments(args)
        result = timer(*tensors)
        after()
        return CourseBenchmark(result.results, int(number), int(repeat), float(min_repeat_ms))

    return time

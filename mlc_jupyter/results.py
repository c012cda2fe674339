"""Frozen result objects that every layer passes around; they know nothing about display."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ParsedCell:
    """What a ``%%tir`` / ``%%relax`` cell defined.

    ``objects`` maps each top-level name the cell defined to its value (``IRModule``,
    ``PrimFunc``, Relax ``Function``, or a plain Python value); ``value`` is the last definition,
    the one a cell's ``_`` holds.
    """

    kind: str
    objects: dict[str, Any]
    source: str
    translated: str
    translations: tuple[str, ...] = ()
    parse_seconds: float = 0.0
    warnings: tuple[str, ...] = field(default=())

    @property
    def names(self) -> list[str]:
        return list(self.objects)

    @property
    def value(self) -> Any:
        return self.objects[self.names[-1]] if self.objects else None


@dataclass(frozen=True)
class TuneProgress:
    """One progress event of a tuning run (sent after each measured batch).

    ``curve`` holds ``(trials_done, best_latency_s)`` points of the task this event is about;
    ``best_latency_s`` is ``None`` until a candidate ran. ``trials_total`` is ``None`` for a run
    limited by time (``time_budget_s``); ``peak_fraction`` is the best kernel's share of this
    machine's fp32 peak (``None`` when unknown).
    """

    task: str
    trials_done: int
    trials_total: int | None
    best_latency_s: float | None
    best_gflops: float | None
    elapsed_s: float
    eta_s: float | None
    curve: tuple[tuple[int, float], ...] = ()
    build_errors: int = 0
    run_errors: int = 0
    first_error: str = ""
    reused: int = 0
    resumed_from: int = 0
    log_path: str = ""
    work_dir: str = ""
    peak_fraction: float | None = None
    time_budget_s: float | None = None


@dataclass(frozen=True)
class ModelTask:
    """One kernel of a whole-model tune: how much of the model it is and what tuning did.

    ``share`` is its part of the model's latency under the default build; ``before_s`` /
    ``after_s`` its default and tuned kernel per call, timed in turns; ``kept`` says which
    one the tuned model uses (``"tuned"`` or ``"default"``).
    """

    name: str
    calls: int
    share: float
    trials: int
    before_s: float | None
    after_s: float | None
    kept: str


@dataclass(frozen=True)
class TuneResult:
    """What ``tune()`` / ``%mlc_tune`` returns: the tuned module and how it got there.

    ``workload`` is the module that was tuned (for Relax: one IRModule per task in
    ``task_workloads``), ``mod`` the tuned module, ``trace`` the best schedule's trace (of the
    slowest task for Relax), latencies in seconds. ``best_latency_s`` is measured after the search
    the way ``%mlc_time`` measures (``timing``), not taken from the search's own figures.
    ``stop_reason`` says why the run ended: ``trials``, ``time``, ``converged`` or ``interrupted``;
    ``spaces`` names each task's search space; ``peak_gflops`` is this machine's fp32 peak for
    the target's cores (``None`` when unknown) and ``bytes`` what the kernel's arguments hold.
    """

    workload: Any
    mod: Any
    trace: Any
    best_latency_s: float | None
    baseline_latency_s: float | None
    target: Any
    work_dir: str
    n_records: int
    trials_requested: int = 0
    trials_new: int = 0
    resumed_from: int = 0
    interrupted: bool = False
    kind: str = "tir"
    flop: float | None = None
    build_errors: int = 0
    run_errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0
    log_path: str = ""
    curves: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    task_workloads: dict[str, Any] = field(default_factory=dict)
    rpc: str | None = None
    stop_reason: str = ""
    spaces: dict[str, str] = field(default_factory=dict)
    timing: Any = None
    peak_gflops: float | None = None
    bytes: float | None = None
    time_budget_s: float | None = None
    #: for a whole model (``kind="model"``): each kernel's share, trials, latency before/after
    model_tasks: tuple[ModelTask, ...] = ()
    notes: tuple[str, ...] = ()
    #: the imported model it came from (its PyTorch original is ``%mlc_time``'s reference)
    origin: Any = field(default=None, compare=False, repr=False)

    @property
    def peak_fraction(self) -> float | None:
        """The tuned kernel's share of this machine's fp32 peak (``None`` when unknown)."""
        gflops = self.best_gflops
        return gflops / self.peak_gflops if gflops and self.peak_gflops else None

    @property
    def speedup(self) -> float | None:
        """Baseline latency over tuned latency (``None`` when either is unknown)."""
        if not self.best_latency_s or not self.baseline_latency_s:
            return None
        return self.baseline_latency_s / self.best_latency_s

    @property
    def best_gflops(self) -> float | None:
        if not self.flop or not self.best_latency_s:
            return None
        return self.flop / self.best_latency_s / 1e9


@dataclass(frozen=True)
class TraceTiming:
    """One re-timing of a trace in the trace replay widget: its decisions and how fast it ran.

    ``decisions`` maps instruction index to the decision (plain Python values); ``correct`` is
    ``None`` when outputs were not compared; ``peak_fraction`` is the share of this machine's
    fp32 peak and ``intensity`` the FLOPs per argument byte (the roofline's axes).
    """

    decisions: dict[int, Any]
    latency_s: float | None
    gflops: float | None
    correct: bool | None
    error: str = ""
    trace: Any = None
    mod: Any = None
    peak_fraction: float | None = None
    intensity: float | None = None


@dataclass(frozen=True)
class ReplayResult:
    """What the trace replay widget binds when a user picks a row: the module and its trace."""

    mod: Any
    trace: Any
    workload: Any
    decisions: dict[int, Any]
    latency_s: float | None = None
    gflops: float | None = None
    correct: bool | None = None


@dataclass(frozen=True)
class KernelUsage:
    """What one compiled GPU kernel uses per thread and per block (ptxas's report)."""

    name: str
    registers: int
    shared_bytes: int
    stack_bytes: int = 0
    spill_bytes: int = 0

    def describe(self) -> str:
        text = f"{self.name}: {self.registers} registers, {self.shared_bytes} B shared"
        if self.spill_bytes:
            text += f", {self.spill_bytes} B spilled"
        return text


@dataclass(frozen=True)
class DeviceCode:
    """The GPU code of a CUDA build, compiled at build time (``Built.device_code``).

    ``cubin`` is empty when nothing was compiled; ``note`` then says why (no nvcc, an
    architecture this nvcc does not know, or TVM compiled it itself for the GPU present).
    """

    arch: str
    compiler: str = ""
    ptx: str = ""
    cubin: bytes = field(default=b"", repr=False)
    kernels: tuple[KernelUsage, ...] = ()
    compile_s: float = 0.0
    note: str = ""

    @property
    def compiled(self) -> bool:
        return bool(self.cubin)

    def summary(self) -> str:
        if not self.compiled:
            return f"device code: {self.note}"
        usage = "; ".join(k.describe() for k in self.kernels)
        return f"device code: {self.arch} cubin by {self.compiler}" + (
            f" ({usage})" if usage else ""
        )


@dataclass(frozen=True)
class Built:
    """A built module (``%mlc_build`` / ``build_module``): call its functions like Python ones.

    ``built["mm_relu"](A, B)`` or ``built.mm_relu(A, B)`` with NumPy arrays, PyTorch tensors or
    TVM tensors; passing only the inputs of a destination-passing function returns the outputs.
    ``cached`` says the build came from the cache (``from_disk``: the one kept between kernel
    restarts), ``build_s`` what the (original) build cost;
    ``checked`` that every buffer index is tested at run time.
    ``mod`` is the module as built: for a Relax model, operators legalised, fused and scheduled.
    ``origin`` is the :class:`ImportedModel` it was built from (its example arguments and its
    PyTorch model are ``%mlc_time``'s default inputs and reference), else ``None``.
    """

    mod: Any
    target: Any
    executable: Any
    signatures: dict[str, Any]
    build_s: float
    cached: bool = False
    relax: bool = False
    extern_symbols: tuple[str, ...] = ()
    key: str = ""
    device_code: DeviceCode | None = None
    origin: Any = field(default=None, compare=False, repr=False)
    notes: tuple[str, ...] = ()
    #: What calls the build's functions and reads its code: the compilation service sets it
    #: (:class:`~mlc_jupyter.compilation.cached_build.BuiltRuntime`); results import no service.
    runtime: Any = field(default=None, compare=False, repr=False)
    checked: bool = False
    from_disk: bool = False

    @property
    def functions(self) -> list[str]:
        return list(self.signatures)

    def __getitem__(self, name: str) -> Any:
        return self.runtime.bound_function(self, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self.__dict__.get("signatures", {}):
            raise AttributeError(name)
        return self[name]

    def __call__(self, *args: Any) -> Any:
        """Call the module's only (or ``main``) function."""
        return self.runtime.bound_function(self, None)(*args)

    def source(self, kind: str = "tir") -> str:
        """Generated code: ``tir``, ``llvm``, ``asm``, ``cuda`` or ``ptx``."""
        return self.runtime.generated_source(self, kind)


@dataclass(frozen=True)
class Timing:
    """One timed variant: seconds per call (median, mean, std, min over ``runs`` repeats).

    ``number`` is the calls per run (0: calibrated by ``min_repeat_ms``); ``correct`` is ``None``
    without a reference; a mismatch or failure sets ``error`` and leaves the times ``None``;
    ``kind`` is ``tvm``, ``numpy`` or ``torch``; ``speedup`` is against the first variant;
    ``bytes`` is what the arguments hold (the least traffic of a call).
    """

    name: str
    median_s: float | None
    mean_s: float | None
    std_s: float | None
    min_s: float | None
    runs: int
    number: int = 0
    gflops: float | None = None
    flops: float | None = None
    correct: bool | None = None
    error: str | None = None
    speedup: float | None = None
    kind: str = "tvm"
    target: str = ""
    results_s: tuple[float, ...] = ()
    bytes: float | None = None

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte of the arguments: where the kernel sits on the roofline."""
        return self.flops / self.bytes if self.flops and self.bytes else None

    @property
    def spread(self) -> float | None:
        """Standard deviation over median of the repeats; large values mean a noisy measurement."""
        if not self.results_s or not self.median_s or self.std_s is None:
            return None
        return self.std_s / self.median_s


@dataclass(frozen=True)
class TimingReport:
    """Several variants side by side (``%mlc_time f g`` / ``time_functions``).

    ``limits`` is this machine's (CPU variants on fp32 data), for "% of peak" and the roofline
    of ``cores`` cores. ``warnings`` bear on the result (a ranking the runs' spread makes
    uncertain); ``notes`` only inform (how long ``torch.compile`` took).
    """

    timings: tuple[Timing, ...]
    warnings: tuple[str, ...] = ()
    limits: MachineLimits | None = None
    cores: int = 1
    notes: tuple[str, ...] = ()

    def peak_fraction(self, timing: Timing) -> float | None:
        """``timing``'s GFLOP/s as a share of this machine's fp32 peak (``None`` when unknown)."""
        peak = self.limits.peak(self.cores) if self.limits else None
        return timing.gflops / peak if peak and timing.gflops else None

    def __getitem__(self, name: str) -> Timing:
        for timing in self.timings:
            if timing.name == name:
                return timing
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.timings]


@dataclass(frozen=True)
class ScheduleStep:
    """One statement of a schedule cell that added trace instructions.

    ``line`` is the cell line (the ``%%mlc_schedule`` line is 1); ``trace`` the Python lines of the
    instructions it added; ``script`` the module text after it; ``changed`` the 1-based lines of
    ``script`` that differ from the previous step's.
    """

    index: int
    line: int
    source: str
    trace: tuple[str, ...]
    script: str
    changed: tuple[int, ...] = ()
    mod: Any = field(default=None, compare=False, repr=False)


class _StepsOutcome:
    """What a run of steps (schedule or passes) says about its outcome."""

    initial_script: str
    steps: tuple[Any, ...]
    error: Any

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def final_script(self) -> str:
        return self.steps[-1].script if self.steps else self.initial_script


@dataclass(frozen=True)
class ScheduleRun(_StepsOutcome):
    """A schedule cell run step by step: the initial module, the steps and the outcome.

    ``error`` is the :class:`~mlc_jupyter.errors.ScheduleStepError` of the failing statement (the
    steps before it are kept); ``sch`` is the schedule (``None`` when a step failed);
    ``namespace`` holds only the names the schedule code itself bound (``i, j = sch.get_loops(...)``).
    """

    initial_script: str
    steps: tuple[ScheduleStep, ...]
    error: Any = None
    sch: Any = field(default=None, compare=False, repr=False)
    namespace: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class PassStep:
    """One pass (or rewrite) applied to a module in the pass stepper.

    ``name`` is the pass's name (``FuseTIR``, ``MatmulAddFuse``, a mutator's class); ``line`` the
    cell line of the statement that applied it (0 for a ``--pipeline`` run); ``script`` the module
    text after it; ``changed`` says whether it changed the text; ``appeared`` / ``vanished`` the
    functions it added or removed; ``op_counts`` operator -> calls over the module's Relax code.
    """

    index: int
    name: str
    line: int
    source: str
    script: str
    changed: bool
    appeared: tuple[str, ...] = ()
    vanished: tuple[str, ...] = ()
    op_counts: dict[str, int] = field(default_factory=dict)
    mod: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PassRun(_StepsOutcome):
    """Passes applied one by one: the initial module, the steps and the outcome.

    ``error`` is the :class:`~mlc_jupyter.errors.PassStepError` of the failing statement (the
    steps before it are kept, ``mod`` is ``None``); ``mod`` is the final module on success.
    """

    initial_script: str
    initial_mod: Any = field(compare=False, repr=False)
    steps: tuple[PassStep, ...]
    error: Any = None
    mod: Any = field(default=None, compare=False, repr=False)
    namespace: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    initial_op_counts: dict[str, int] = field(default_factory=dict)
    code: str = ""

    def module_at(self, index: int) -> Any:
        """The module after step ``index`` (0: the initial module)."""
        return self.steps[index - 1].mod if index else self.initial_mod


@dataclass(frozen=True)
class MachineLimits:
    """This machine's fp32 limits, measured once and cached (``mlc_jupyter.measure.machine``).

    ``peak_gflops[cores][bits]`` is the fp32 FMA throughput of ``cores`` cores using vectors
    ``bits`` wide; ``bandwidth_gbs[cores]`` the memory bandwidth of a large copy (bytes read plus
    bytes written per second). ``path`` is the cache file, ``seconds`` what measuring took,
    ``quiet`` whether other processes stayed off the CPU meanwhile (if not, figures may read low).
    """

    machine: str
    cores: int
    peak_gflops: dict[int, dict[int, float]]
    bandwidth_gbs: dict[int, float]
    measured_at: str
    seconds: float = 0.0
    path: str = ""
    cached: bool = False
    quiet: bool = True

    def _nearest(self, table: dict[int, Any], cores: int | None) -> Any:
        if not table:
            return None
        want = cores or self.cores
        fits = [c for c in table if c <= want]
        return table[max(fits) if fits else min(table)]

    def peak(self, cores: int | None = None, bits: int | None = None) -> float | None:
        """GFLOP/s of ``cores`` cores (all by default) at vector width ``bits`` (widest)."""
        widths = self._nearest(self.peak_gflops, cores)
        if not widths:
            return None
        fits = [b for b in widths if bits is None or b <= bits]
        return float(widths[max(fits)]) if fits else None

    def bandwidth(self, cores: int | None = None) -> float | None:
        """GB/s of ``cores`` cores (all by default)."""
        value = self._nearest(self.bandwidth_gbs, cores)
        return float(value) if value else None

    def roof(self, intensity: float, cores: int | None = None) -> float | None:
        """The roofline: attainable GFLOP/s at ``intensity`` flop per byte."""
        peak, bandwidth = self.peak(cores), self.bandwidth(cores)
        if peak is None or bandwidth is None:
            return peak
        return min(peak, bandwidth * intensity)


@dataclass(frozen=True)
class ModelSummary:
    """What an imported model holds: its operators, its weights and the kernels a build makes.

    ``ops`` counts each Relax operator in ``main`` (``("nn.conv2d", 20)``, most frequent first);
    ``kernels`` lists each kernel TVM will build after legalising and fusing, with how often
    ``main`` calls it.
    """

    ops: tuple[tuple[str, int], ...]
    n_params: int
    param_bytes: int
    kernels: tuple[tuple[str, int], ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class ImportedModel:
    """A PyTorch model imported into Relax (``%mlc_import`` / ``import_model``).

    ``mod`` is the Relax IRModule (``%mlc_build``, ``%mlc_tune`` and ``%mlc_time`` take the
    result itself); ``example_args`` the NumPy arguments of ``main`` (the model's inputs, then the
    weights when they are kept as inputs); ``model`` the PyTorch module, the reference.
    """

    mod: Any
    model: Any
    example_args: tuple[Any, ...]
    summary: ModelSummary
    via: str = "export"
    params: str = "bound"
    import_s: float = 0.0
    stages: tuple[tuple[str, float], ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return type(self.model).__name__


@dataclass(frozen=True)
class KernelTime:
    """One kernel of a Relax build in a per-kernel profile: calls and seconds per model call."""

    name: str
    calls: int
    seconds: float
    flops: float | None = None

    @property
    def gflops(self) -> float | None:
        return self.flops / self.seconds / 1e9 if self.flops and self.seconds else None


@dataclass(frozen=True)
class KernelProfile:
    """Where a Relax build's time goes: each kernel's time per model call, slowest first.

    ``overhead_s`` is the time of the VM's own instructions (allocations, shape checks): the
    model's latency ``total_s``, measured without instrumentation, minus the kernels' time.
    """

    name: str
    kernels: tuple[KernelTime, ...]
    overhead_s: float
    total_s: float | None
    runs: int

    @property
    def kernel_s(self) -> float:
        return sum(k.seconds for k in self.kernels)

    def share(self, kernel: KernelTime) -> float:
        """The kernel's part of the time of all kernels and VM instructions together."""
        whole = self.kernel_s + self.overhead_s
        return kernel.seconds / whole if whole else 0.0

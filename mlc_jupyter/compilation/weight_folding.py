"""A model's constant arithmetic done once, in NumPy, before its kernels are made.

An imported CNN computes on its weights at every call: the transposes ``ConvertLayout`` puts in
front of each weight (OIHW to HWIO), batch norm's ``(y - mean) / sqrt(var + eps) * gamma + beta``
after each convolution. TVM's ``FoldConstant`` folds such constants by compiling a kernel for
each one with LLVM and running it, one compile per weight: most of the seconds a ResNet-18 build
took. Here the model's constant expressions are evaluated in NumPy instead (milliseconds), and
two rewrites that ONNX Runtime and OpenVINO make at load time are made first:

* :func:`fold_constants`: every operator call whose inputs are all constants and that NumPy
  computes exactly as TVM would (layout changes, elementwise arithmetic, square roots) becomes a
  constant;
* :func:`fold_affine_epilogues`: a chain of per-output-channel ``subtract`` / ``divide`` /
  ``multiply`` / ``add`` by constants after a convolution with a constant weight (batch norm for
  inference, a bias) becomes a scaled weight and one bias ``add``, so the fused kernel's epilogue
  adds one vector per output instead of four operations.

The convolution's output is then ``sum(x * (w * s)) + t`` instead of ``(sum(x * w) - m) / d * g
+ b``: the same value up to float rounding (ONNX Runtime's and OpenVINO's fusions round the same
way). Both passes take and return a Relax ``IRModule``; functions other than Relax ones are left
as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ..tvm_compat import (
    buffer_access,
    buffer_load,
    call_with_args,
    constant_array,
    param_buffers,
    prim_func_type,
    relax_bindings,
    relax_expr_kind,
    tir,
    tir_nodes,
    tvm,
    var_name,
)
from .tir_walk import statements


def _op_name(call: Any) -> str:
    op = getattr(call, "op", None)
    return str(getattr(op, "name", "")) if relax_expr_kind(op) == "op" else ""


def _shape_values(expr: Any) -> list[int] | None:
    values = getattr(expr, "values", None)
    if values is None:
        return None
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        return None


def _axes(attr: Any) -> list[int] | None:
    return None if attr is None else [int(a) for a in attr]


def _permute(call: Any, a: np.ndarray) -> np.ndarray:
    return np.transpose(a, _axes(call.attrs.axes))


def _expand_dims(call: Any, a: np.ndarray) -> np.ndarray:
    return np.expand_dims(a, tuple(_axes(call.attrs.axis) or ()))


def _squeeze(call: Any, a: np.ndarray) -> np.ndarray:
    axes = _axes(call.attrs.axis)
    return np.squeeze(a, None if axes is None else tuple(axes))


def _rsqrt(_call: Any, a: np.ndarray) -> np.ndarray:
    return 1 / np.sqrt(a)


_UNARY: dict[str, Callable[[Any, np.ndarray], np.ndarray]] = {
    "relax.permute_dims": _permute,
    "relax.expand_dims": _expand_dims,
    "relax.squeeze": _squeeze,
    "relax.sqrt": lambda _c, a: np.sqrt(a),
    "relax.rsqrt": _rsqrt,
    "relax.negative": lambda _c, a: -a,
    "relax.astype": lambda _c, a: a,  # cast to the call's dtype below
}
_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "relax.add": np.add,
    "relax.subtract": np.subtract,
    "relax.multiply": np.multiply,
    "relax.divide": np.divide,
}


def _result_dtype(call: Any) -> str | None:
    ty = getattr(call, "ty", None)
    dtype = getattr(ty, "dtype", None)
    return str(dtype) if dtype else None


def evaluate(call: Any, value_of: Callable[[Any], np.ndarray | None]) -> np.ndarray | None:
    """The value of ``call`` when its tensor inputs are constants (``value_of`` gives each one's
    NumPy value or ``None``) and NumPy computes it as TVM would; ``None`` otherwise."""
    name = _op_name(call)
    dtype = _result_dtype(call)
    if dtype is None or not (name in _UNARY or name in _BINARY or name == "relax.reshape"):
        return None
    args = list(call.args)
    if name == "relax.reshape":
        shape = _shape_values(args[1]) if len(args) > 1 else None
        a = value_of(args[0])
        out = None if a is None or shape is None else a.reshape(shape)
    elif name in _UNARY:
        a = value_of(args[0])
        out = None if a is None else _UNARY[name](call, a)
    else:
        a, b = value_of(args[0]), value_of(args[1])
        if a is None or b is None:
            return None
        with np.errstate(all="ignore"):
            out = _BINARY[name](a.astype(dtype), b.astype(dtype))
    if out is None:
        return None
    out = np.ascontiguousarray(out, dtype=dtype)
    shape = [int(d) for d in getattr(call.ty, "shape", None) or []]
    return out if list(out.shape) == shape else None


def constant_value(expr: Any) -> np.ndarray | None:
    """A Relax constant's value as a NumPy array (``None`` for anything else)."""
    return constant_array(expr)


def _mutator_base() -> tuple[Any, Any]:
    relax = tvm().relax
    return relax.expr_functor.mutator, relax.PyExprMutator


def _rewrite(mod: Any, make: Callable[[Any], Any]) -> Any:
    """Each Relax function of ``mod`` rewritten by the mutator ``make(mod)``."""
    relax = tvm().relax
    out = mod.clone()
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            out[gv] = make(mod).visit_expr(func)
    return out


def fold_constants(mod: Any) -> Any:
    """``mod`` with each operator call on constants that NumPy computes (see :func:`evaluate`)
    replaced by its value."""
    relax = tvm().relax
    decorate, base = _mutator_base()

    @decorate
    class Folder(base):  # type: ignore[misc, valid-type]
        def __init__(self, mod: Any) -> None:
            super().__init__(mod)
            self.constants: dict[Any, Any] = {}

        def value_of(self, expr: Any) -> np.ndarray | None:
            if relax_expr_kind(expr) == "var" and expr in self.constants:
                expr = self.constants[expr]
            return constant_value(expr)

        def visit_var_binding_(self, binding: Any) -> None:
            value = binding.value
            if relax_expr_kind(value) == "call":
                folded = evaluate(value, self.value_of)
                if folded is not None:
                    self.constants[binding.var] = relax.const(folded)
                    return
            super().visit_var_binding_(binding)

        def visit_var_(self, var: Any) -> Any:
            found = self.constants.get(var)
            return found if found is not None else super().visit_var_(var)

        def visit_dataflow_var_(self, var: Any) -> Any:
            found = self.constants.get(var)
            return found if found is not None else super().visit_dataflow_var_(var)

    return _rewrite(mod, Folder)


#: Operators a per-output-channel constant joins an affine epilogue with (``y op c``).
_AFFINE = ("relax.add", "relax.subtract", "relax.multiply", "relax.divide")


def _channel_vector(value: np.ndarray | None, axis: int, ndim: int, channels: int) -> Any:
    """``value`` as one number per channel (float64), when it broadcasts against an ``ndim``-D
    output along the channel ``axis`` only; ``None`` otherwise."""
    if value is None or value.ndim > ndim or value.size not in (1, channels):
        return None
    shape = (1,) * (ndim - value.ndim) + value.shape
    if any(d != 1 for i, d in enumerate(shape) if i != axis):
        return None
    return np.broadcast_to(value.reshape(-1), (channels,)).astype(np.float64)


def _channel_axes(call: Any) -> tuple[int, int] | None:
    """The output's channel axis and the weight's output-channel axis of a 2-D convolution."""
    attrs = call.attrs
    out_layout, kernel_layout = str(attrs.out_layout), str(attrs.kernel_layout)
    if sorted(out_layout) != sorted("NCHW") or sorted(kernel_layout) != sorted("OIHW"):
        return None
    return out_layout.index("C"), kernel_layout.index("O")


def _affine_chains(func: Any) -> dict[Any, tuple[Any, list[Any]]]:
    """For each convolution of ``func`` (NHWC output, HWIO constant weight) whose output only
    goes through per-channel affine operators by constants: the last binding of the chain ->
    (the convolution's binding var, the chain's bindings in order)."""
    bindings = relax_bindings(func)
    uses: dict[Any, int] = {}

    def count(expr: Any) -> None:
        kind = relax_expr_kind(expr)
        if kind == "var":
            uses[expr] = uses.get(expr, 0) + 1
        elif kind == "call":
            for arg in expr.args:
                count(arg)
        elif kind == "tuple":
            for field in expr.fields:
                count(field)
        elif kind == "item":
            count(expr.tuple_value)

    for _, value in bindings:
        count(value)
    count(func.body.body if hasattr(func.body, "body") else func.body)
    values = dict(bindings)
    chains: dict[Any, tuple[Any, list[Any]]] = {}
    for var, value in bindings:
        if _op_name(value) != "relax.nn.conv2d" or _channel_axes(value) is None:
            continue
        if constant_value(value.args[1]) is None:
            continue
        axis = _channel_axes(value)[0]
        channels = int(value.ty.shape[axis])
        chain, last = [], var
        while uses.get(last, 0) == 1:
            following = next((v for v, x in bindings if _uses(x, last)), None)
            step = values.get(following)
            if following is None or _op_name(step) not in _AFFINE:
                break
            lhs, rhs = step.args[0], step.args[1]
            if not lhs.same_as(last):
                break
            if _channel_vector(constant_value(rhs), axis, 4, channels) is None:
                break
            if [int(d) for d in step.ty.shape] != [int(d) for d in value.ty.shape]:
                break
            chain.append(following)
            last = following
        if chain:
            chains[last] = (var, chain)
    return chains


def _uses(expr: Any, var: Any) -> bool:
    kind = relax_expr_kind(expr)
    if kind == "var":
        return expr.same_as(var)
    if kind == "call":
        return any(_uses(a, var) for a in expr.args)
    if kind == "tuple":
        return any(_uses(f, var) for f in expr.fields)
    if kind == "item":
        return _uses(expr.tuple_value, var)
    return False


def _scale_shift(chain_values: list[Any], axis: int, channels: int) -> tuple[Any, Any]:
    """``(s, t)`` with ``chain(y) == y * s + t`` per channel (float64)."""
    scale, shift = np.ones(channels), np.zeros(channels)
    for step in chain_values:
        c = _channel_vector(constant_value(step.args[1]), axis, 4, channels)
        name = _op_name(step)
        if name == "relax.add":
            shift = shift + c
        elif name == "relax.subtract":
            shift = shift - c
        elif name == "relax.multiply":
            scale, shift = scale * c, shift * c
        else:
            scale, shift = scale / c, shift / c
    return scale, shift


def fold_affine_epilogues(mod: Any) -> Any:
    """``mod`` with each convolution's per-channel affine epilogue (batch norm for inference, a
    bias) folded into its weight and one bias ``add`` (see the module's docstring)."""
    relax = tvm().relax
    decorate, base = _mutator_base()

    @decorate
    class Folder(base):  # type: ignore[misc, valid-type]
        def __init__(self, mod: Any) -> None:
            super().__init__(mod)
            self.chains: dict[Any, tuple[Any, list[Any]]] = {}
            self.convs: dict[Any, Any] = {}  # convolution var -> its chain's last var
            self.skipped: set[Any] = set()
            self.values: dict[Any, Any] = {}

        def visit_function_(self, func: Any) -> Any:
            self.chains = _affine_chains(func)
            self.values = dict(relax_bindings(func))
            self.convs = {conv: last for last, (conv, _) in self.chains.items()}
            self.skipped = {v for _, chain in self.chains.values() for v in chain[:-1]}
            return super().visit_function_(func)

        def visit_var_binding_(self, binding: Any) -> None:
            var = binding.var
            if var in self.convs:
                conv, chain = self.chains[self.convs[var]]
                call = binding.value
                axis, weight_axis = _channel_axes(call)
                channels = int(call.ty.shape[axis])
                scale, shift = _scale_shift([self.values[v] for v in chain], axis, channels)
                weight = constant_value(call.args[1])
                along = [1] * weight.ndim
                along[weight_axis] = channels
                scaled = (weight.astype(np.float64) * scale.reshape(along)).astype(weight.dtype)
                new = call_with_args(call, [self.visit_expr(call.args[0]), relax.const(scaled)])
                out = self.builder_.emit(new, name_hint=var_name(var))
                dtype = str(call.ty.dtype)
                if np.any(shift):
                    along = [1] * 4
                    along[axis] = channels
                    bias = relax.const(shift.reshape(along).astype(dtype))
                    out = self.builder_.emit(relax.op.add(out, bias), name_hint="bias")
                self.set_var_remap(var, out)
                return
            if var in self.skipped:
                return
            if var in self.chains:
                conv = self.chains[var][0]
                kept = self.visit_expr(conv)
                if isinstance(var, relax.DataflowVar):
                    self.set_var_remap(var, kept)
                else:
                    self.set_var_remap(
                        var, self.builder_.emit_output(kept, name_hint=var_name(var))
                    )
                return
            super().visit_var_binding_(binding)

    return _rewrite(mod, Folder)


def _index_value(expr: Any, env: dict[Any, np.ndarray]) -> Any:
    """An integer index expression of block iterators, over NumPy grids of their values."""
    t = tir()
    if isinstance(expr, t.IntImm):
        return int(expr.value)
    if isinstance(expr, t.Var):
        for var, grid in env.items():
            if var.same_as(expr):
                return grid
        raise NotALayoutCopy("an index names a variable other than the block's iterators")
    if isinstance(expr, t.Cast):
        return _index_value(expr.value, env)
    ops = {
        t.Add: np.add, t.Sub: np.subtract, t.Mul: np.multiply, t.FloorDiv: np.floor_divide,
        t.FloorMod: np.mod, t.Min: np.minimum, t.Max: np.maximum,
    }  # fmt: skip
    for cls, op in ops.items():
        if isinstance(expr, cls):
            return op(_index_value(expr.a, env), _index_value(expr.b, env))
    raise NotALayoutCopy(f"an index uses {type(expr).__name__}")


class NotALayoutCopy(Exception):  # noqa: N818 - a verdict, not an error
    """The kernel does more than copy its inputs' elements to other places."""


def layout_copy(func: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run a PrimFunc that only moves elements (a weight packing: each block stores one input
    element at an index computed from its iterators) on NumPy arrays: its outputs, in order.

    Raises :class:`NotALayoutCopy` for anything else (arithmetic on values, guards, loops that
    do not cover a block's iterators).
    """
    nodes = tir_nodes()
    params = param_buffers(func)
    if len(params) <= len(inputs):
        raise NotALayoutCopy("no output")
    ins = params[: len(inputs)]
    outs = params[len(inputs) :]
    results = [np.zeros([int(d) for d in b.shape], dtype=str(b.dtype)) for b in outs]
    copies = 0
    for node in statements(func.body):
        if not isinstance(node, nodes.BlockRealize) or not node.block.iter_vars:
            continue
        predicate = node.predicate
        if not (isinstance(predicate, nodes.IntImm) and int(predicate) == 1):
            raise NotALayoutCopy("a block is guarded")
        block = node.block
        if not all(isinstance(v, nodes.Var) for v in node.iter_values):
            raise NotALayoutCopy("a block's iterators are not its loops")
        store = block.body
        access = buffer_access(store)
        load = buffer_load(getattr(store, "value", None))
        if access is None or not access[2] or load is None:
            raise NotALayoutCopy("a block does not copy one element")
        target = next((i for i, b in enumerate(outs) if b.same_as(access[0])), None)
        source = next((i for i, b in enumerate(ins) if b.same_as(load[0])), None)
        if target is None or source is None:
            raise NotALayoutCopy("a block copies between buffers other than the parameters")
        extents = []
        for iv in block.iter_vars:
            if int(iv.dom.min) != 0:
                raise NotALayoutCopy("an iterator does not start at 0")
            extents.append(int(iv.dom.extent))
        grids = np.indices(extents, dtype=np.int64, sparse=True)
        env = {iv.var: grid for iv, grid in zip(block.iter_vars, grids, strict=True)}
        digits = _digits(block, [*load[1], *access[1]])
        read = _strided_view(inputs[source], load[1], digits)
        written = _strided_view(results[target], access[1], digits, write=True)
        if read is not None and written is not None:
            written[...] = read
            copies += 1
            continue
        src = _flat_index([_index_value(i, env) for i in load[1]], inputs[source].shape, grids)
        dst = _flat_index([_index_value(i, env) for i in access[1]], results[target].shape, grids)
        values = np.ascontiguousarray(inputs[source]).reshape(-1)
        values = values if src is None else values[src]
        if dst is None:
            results[target][...] = values.reshape(results[target].shape)
        else:
            results[target].reshape(-1)[dst] = values
        copies += 1
    if copies == 0:
        raise NotALayoutCopy("no block")
    return results


#: An affine sum of digits: each digit's coefficient, and a constant.
Affine = tuple[list[int], int]


@dataclasses.dataclass(frozen=True)
class Digits:
    """A block's iterators written in mixed radix: iterator ``n`` is ``sum(weight * digit)`` over
    its digits; ``radices`` are the digits' extents, the grid a strided copy runs over."""

    iters: list[Any]
    forms: list[Affine]
    radices: list[int]


def _digits(block: Any, index: list[Any]) -> Digits:
    """``block``'s iterators split at each constant that ``index`` divides or takes the
    remainder by (a packed weight's ``k // 32, k % 32 // 16, k % 16``), so that those divisions
    become sums of digits."""
    t = tir()
    cuts: set[int] = set()
    stack = list(index)
    while stack:
        expr = stack.pop()
        if isinstance(expr, t.FloorDiv | t.FloorMod) and isinstance(expr.b, t.IntImm):
            cuts.add(int(expr.b.value))
        stack.extend(getattr(expr, name) for name in ("a", "b", "value") if hasattr(expr, name))
    splits = []  # each iterator's digits' weights, the most significant first (C order)
    for iv in block.iter_vars:
        extent, points = int(iv.dom.extent), [1]
        for cut in sorted(cuts):
            if 1 < cut < extent and extent % cut == 0 and cut % points[-1] == 0:
                points.append(cut)
        splits.append((extent, points[::-1]))
    radices = []  # each digit's extent: the weight above it over its own
    for extent, weights in splits:
        radices.extend(
            upper // weight for upper, weight in zip([extent, *weights[:-1]], weights, strict=True)
        )
    forms, first = [], 0
    for _, weights in splits:
        coefficients = [0] * len(radices)
        coefficients[first : first + len(weights)] = weights
        forms.append((coefficients, 0))
        first += len(weights)
    return Digits([iv.var for iv in block.iter_vars], forms, radices)


def _affine(expr: Any, digits: Digits) -> Affine | None:
    """``expr`` as an affine sum of ``digits`` with coefficients and constant of at least 0;
    ``None`` when it is not one (a product of two iterators, a division that cuts a digit)."""
    t = tir()
    if isinstance(expr, t.IntImm):
        return [0] * len(digits.radices), int(expr.value)
    if isinstance(expr, t.Var):
        for var, form in zip(digits.iters, digits.forms, strict=True):
            if var.same_as(expr):
                return form
        raise NotALayoutCopy("an index names a variable other than the block's iterators")
    if isinstance(expr, t.Cast):
        return _affine(expr.value, digits)
    if isinstance(expr, t.FloorDiv | t.FloorMod):
        value = _affine(expr.a, digits)
        if value is None or not isinstance(expr.b, t.IntImm) or int(expr.b.value) <= 0:
            return None
        return _divided(value, int(expr.b.value), digits.radices, isinstance(expr, t.FloorMod))
    if not isinstance(expr, t.Add | t.Sub | t.Mul):
        return None
    a, b = _affine(expr.a, digits), _affine(expr.b, digits)
    if a is None or b is None:
        return None
    if isinstance(expr, t.Mul):
        if any(a[0]) and any(b[0]):
            return None
        scale, (terms, constant) = (a[1], b) if not any(a[0]) else (b[1], a)
        result = [c * scale for c in terms], constant * scale
    else:
        sign = -1 if isinstance(expr, t.Sub) else 1
        result = [x + sign * y for x, y in zip(a[0], b[0], strict=True)], a[1] + sign * b[1]
    return result if result[1] >= 0 and min(result[0], default=0) >= 0 else None


def _divided(value: Affine, divisor: int, radices: list[int], remainder: bool) -> Affine | None:
    """``value // divisor`` (``value % divisor`` with ``remainder``) as an affine sum, when the
    digits whose coefficients ``divisor`` does not divide, with the constant's remainder, stay
    below ``divisor``: then they are the remainder and the others the quotient."""
    terms, constant = value
    low = [c if c % divisor else 0 for c in terms]
    if sum(c * (r - 1) for c, r in zip(low, radices, strict=True)) + constant % divisor >= divisor:
        return None
    if remainder:
        return low, constant % divisor
    return [0 if c % divisor else c // divisor for c in terms], constant // divisor


def _strided_view(array: np.ndarray, index: Any, digits: Digits, write: bool = False) -> Any:
    """``array[index]`` at each point of the ``digits``' grid as one strided view of ``array``'s
    memory, when each index is an affine sum of the digits (a transpose, a split or merged axis):
    a copy through it moves each element once, without the index arrays of :func:`_flat_index`.
    ``None`` for any other index, and with ``write`` (a view to store through; ``array``
    C-contiguous) also when two points of the grid may name one element, where the order of the
    stores would matter.

    Raises :class:`NotALayoutCopy` for an index outside the array."""
    sums = [_affine(i, digits) for i in index]
    if len(sums) != array.ndim or any(s is None or s[1] < 0 for s in sums):
        return None  # the gather of :func:`layout_copy` then checks and runs it
    if len(digits.radices) > 32:  # NumPy's most dimensions
        return None
    if write and not array.flags.c_contiguous:
        return None
    array = np.ascontiguousarray(array)
    offset, steps, stride = 0, [0] * len(digits.radices), 1
    for (terms, constant), dim in zip(reversed(sums), reversed(array.shape), strict=True):
        reach = sum(c * (r - 1) for c, r in zip(terms, digits.radices, strict=True))
        if constant + reach >= dim:
            raise NotALayoutCopy("the copy does not index its buffers: an index leaves its axis")
        offset += constant * stride
        steps = [step + c * stride for step, c in zip(steps, terms, strict=True)]
        stride *= int(dim)
    if write and not _one_to_one(steps, digits.radices):
        return None
    return np.lib.stride_tricks.as_strided(
        array.reshape(-1)[offset:], shape=digits.radices,
        strides=[step * array.itemsize for step in steps], writeable=write,
    )  # fmt: skip


def _one_to_one(steps: list[int], extents: list[int]) -> bool:
    """Whether the offsets ``sum(steps[i] * point[i])`` over a grid of ``extents`` all differ:
    each step, smallest first, reaches past all the offsets the smaller ones reach."""
    reach = 0
    for step, extent in sorted((s, e) for s, e in zip(steps, extents, strict=True) if e > 1):
        if step <= reach:
            return False
        reach += step * (extent - 1)
    return True


def _flat_index(index: list[Any], shape: tuple[int, ...], grids: Any) -> np.ndarray | None:
    """The flat positions in an array of ``shape`` that ``index`` (one value or NumPy grid per
    axis) names at each point of the iterators' ``grids``, in their order; ``None`` when it names
    every element in order (the iterators are the axes).

    One flat index makes a copy one gather or scatter of the elements, several times faster
    than indexing with a full grid per axis. Raises :class:`NotALayoutCopy` for an index outside
    the array."""
    extents = tuple(grid.size for grid in grids)
    if extents == tuple(shape) and all(i is g for i, g in zip(index, grids, strict=True)):
        return None
    if len(index) != len(shape):
        raise NotALayoutCopy("the copy does not index its buffers: wrong number of indices")
    flat = np.zeros((), dtype=np.int64)
    stride = 1
    for value, dim in zip(reversed(index), reversed(shape), strict=True):
        value = np.asarray(value, dtype=np.int64)
        if value.size and (value.min() < 0 or value.max() >= dim):
            raise NotALayoutCopy("the copy does not index its buffers: an index leaves its axis")
        flat = flat + value * stride
        stride *= int(dim)
    return np.broadcast_to(flat, extents).reshape(-1)


def run_packings(mod: Any, is_packing: Callable[[str], bool]) -> Any:
    """``mod`` with each call of a packing kernel (``is_packing(name)``) on constants replaced by
    its results, computed by :func:`layout_copy` in NumPy; a packing that is not a plain layout
    copy stays a call (TVM's ``FoldConstant`` can still run it)."""
    relax = tvm().relax
    decorate, base = _mutator_base()
    prim_func = prim_func_type()

    @decorate
    class Packer(base):  # type: ignore[misc, valid-type]
        def __init__(self, mod: Any) -> None:
            super().__init__(mod)
            self.constants: dict[Any, Any] = {}
            self.tuples: dict[Any, list[Any]] = {}

        def packed(self, value: Any) -> list[np.ndarray] | None:
            if _op_name(value) != "relax.call_tir" or len(value.args) < 2:
                return None
            callee, args = value.args[0], value.args[1]
            if relax_expr_kind(callee) != "global" or not is_packing(str(callee.name_hint)):
                return None
            func = mod[callee]
            if not isinstance(func, prim_func) or relax_expr_kind(args) != "tuple":
                return None
            inputs = []
            for arg in args.fields:
                if relax_expr_kind(arg) == "var" and arg in self.constants:
                    arg = self.constants[arg]
                array = constant_value(arg)
                if array is None:
                    return None
                inputs.append(array)
            try:
                return layout_copy(func, inputs)
            except NotALayoutCopy:
                return None

        def visit_var_binding_(self, binding: Any) -> None:
            var, value = binding.var, binding.value
            results = self.packed(value)
            if results is not None:
                consts = [relax.const(r) for r in results]
                if isinstance(getattr(var, "ty", None), relax.TupleType):
                    self.tuples[var] = consts
                else:
                    self.constants[var] = consts[0]
                return
            if relax_expr_kind(value) == "item" and value.tuple_value in self.tuples:
                self.constants[var] = self.tuples[value.tuple_value][int(value.index)]
                return
            super().visit_var_binding_(binding)

        def replacement(self, var: Any) -> Any:
            if var in self.constants:
                return self.constants[var]
            if var in self.tuples:
                return relax.Tuple(self.tuples[var])
            return None

        def visit_var_(self, var: Any) -> Any:
            found = self.replacement(var)
            return found if found is not None else super().visit_var_(var)

        def visit_dataflow_var_(self, var: Any) -> Any:
            found = self.replacement(var)
            return found if found is not None else super().visit_dataflow_var_(var)

    return _rewrite(mod, Packer)

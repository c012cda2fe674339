# Book §6.2.3 "Tensorization": the tensor intrinsic's description and implementation (two
# standalone prim_funcs, registered by the book with `tvm.tir.TensorIntrin.register`).
# Repairs (PDF extraction):
# - the three `T.match_buffer` lines of each function were wrapped with `↪` marks (joined back);
# - a page break after `T.writes(...)` in tmm16_desc dropped the indentation of the loop nest
#   (re-indented under `with T.block("root"):`);
# - `strides=[sa, -1]` / `[sb, -1]` / `[sc, -1]` are `[sa, 1]` ... : the minus sign is an extraction
#   artefact (the course notes 000 / 001 print `[sa, 1]`; a stride of -1 cannot match the row-major
#   16x16 tiles the book tensorizes).
# ruff: noqa
# fmt: off
@T.prim_func
def tmm16_desc(a: T.handle, b: T.handle, c: T.handle) -> None:
    A = T.match_buffer(a, (16, 16), "float32", offset_factor=16, scope="global.A_reg")
    B = T.match_buffer(b, (16, 16), "float32", offset_factor=16, scope="global.B_reg")
    C = T.match_buffer(c, (16, 16), "float32", offset_factor=16, scope="global.accumulator")

    with T.block("root"):
        T.reads(C[0:16, 0:16], A[0:16, 0:16], B[0:16, 0:16])
        T.writes(C[0:16, 0:16])
        for i, j, k in T.grid(16, 16, 16):
            with T.block(""):
                vij, vjj, vkk = T.axis.remap("SSR", [i, j, k])
                C[vij, vjj] = C[vij, vjj] + A[vij, vkk] * B[vjj, vkk]

@T.prim_func
def tmm16_impl(a: T.handle, b: T.handle, c: T.handle) -> None:
    sa = T.int32()
    sb = T.int32()
    sc = T.int32()
    A = T.match_buffer(a, (16, 16), "float32", offset_factor=16, strides=[sa, 1], scope="global.A_reg")
    B = T.match_buffer(b, (16, 16), "float32", offset_factor=16, strides=[sb, 1], scope="global.B_reg")
    C = T.match_buffer(c, (16, 16), "float32", offset_factor=16, strides=[sc, 1], scope="global.accumulator")

    with T.block("root"):
        T.reads(C[0:16, 0:16], A[0:16, 0:16], B[0:16, 0:16])
        T.writes(C[0:16, 0:16])
        T.evaluate(
            T.call_extern(
                "tmm16",
                C.access_ptr("w"),
                A.access_ptr("r"),
                B.access_ptr("r"),
                sa,
                sb,
                sc,
                dtype="int32",
            )
        )

"""`simdgroup_matrix<T, 8, 8>`: 8x8 matrices owned by a SIMD-group, two elements per lane.

A matrix value is a lane array of shape (n, 2): lane L holds elements (row, col) and
(row, col + 1) with the layout production kernels rely on (msl-semantics.md §6):
`row = (q & 4) + (L / 2) % 4`, `col = (q & 2) * 2 + (L % 2) * 2`, `q = L / 4`. So
`thread_elements()` is simply the lane's two values, and load/store/multiply gather the 32 lanes
of each SIMD-group into 8x8 matrices. Every operation is cooperative: it must be executed by
all 32 lanes of the SIMD-group (uniform control flow, full SIMD-group), or it is reported.
"""

from __future__ import annotations

import numpy as np

from metalsim.exec import arith
from metalsim.exec import memory as mem
from metalsim.exec.compiled import E
from metalsim.exec.runtime import load_loc, store_loc
from metalsim.lang import ast
from metalsim.lang import types as ty

LANE = np.arange(32)
_Q = LANE // 4
ROW = (_Q & 4) + (LANE // 2) % 4
COL = (_Q & 2) * 2 + (LANE % 2) * 2


def to_matrices(values: np.ndarray) -> np.ndarray:
    """(G*32, 2) lane values of G complete SIMD-groups -> (G, 8, 8) matrices."""
    v = values.reshape(-1, 32, 2)
    out = np.zeros((v.shape[0], 8, 8), values.dtype)
    out[:, ROW, COL] = v[:, :, 0]
    out[:, ROW, COL + 1] = v[:, :, 1]
    return out


def to_lanes(matrices: np.ndarray) -> np.ndarray:
    """(G, 8, 8) matrices -> (G*32, 2) lane values."""
    return np.stack([matrices[:, ROW, COL], matrices[:, ROW, COL + 1]], axis=-1).reshape(-1, 2)


def complete_groups(f, lanes, coord, what: str) -> np.ndarray:
    """Mask (over the active lanes) of lanes whose whole SIMD-group of 32 is active; reports
    the rest, since a cooperative matrix operation needs every lane."""
    m = f.m
    groups = m.batch.simd_global[lanes.idx]
    _, inverse, counts = np.unique(groups, return_inverse=True, return_counts=True)
    full = counts[inverse] == 32
    if not full.all():
        m.report("divergent-simdgroup", "error",
                 f"{what} must be executed by all 32 threads of the SIMD-group", coord,
                 lanes.indices()[~full],
                 hint="simdgroup_matrix operations need uniform control flow and threadgroups "
                      "whose size is a multiple of 32")
    return full


def _matrix_arg(c, node: ast.Node, scope, elem: ty.ScalarType | None = None):
    e = c.expr(node, scope)
    if not isinstance(e.type, ty.SimdMatrixType):
        c.error(f"expected a simdgroup_matrix, not '{e.type}'", node)
    if elem is not None and e.type.elem != elem:
        c.error(f"simdgroup_matrix element types differ ('{e.type.elem}' and '{elem}')", node)
    return e


def _product(a: np.ndarray, b: np.ndarray, acc: np.ndarray | None, t) -> np.ndarray:
    """a @ b (+ acc) for lane arrays of complete SIMD-groups, computed in float32 and rounded
    to the result's element type (the hardware's internal precision is not documented)."""
    ma, mb = to_matrices(a).astype(np.float32), to_matrices(b).astype(np.float32)
    prod = ma @ mb
    if acc is not None:
        prod = prod + to_matrices(acc).astype(np.float32)
    return arith.convert(to_lanes(prod), ty.FLOAT, t.elem)


def _multiply(accumulate: bool):
    def handler(c, node: ast.Call, scope) -> E:
        count = 4 if accumulate else 3
        if len(node.args) != count:
            c.error(f"{node.func.name} takes {count} arguments", node)
        d = _matrix_arg(c, node.args[0], scope)
        t = d.type
        if d.loc is None or d.readonly:
            c.error("the destination matrix must be a modifiable variable", node.args[0])
        a = _matrix_arg(c, node.args[1], scope, t.elem)
        b = _matrix_arg(c, node.args[2], scope, t.elem)
        acc = _matrix_arg(c, node.args[3], scope, t.elem) if accumulate else None
        dloc, aev, bev, coord = d.loc, a.ev, b.ev, node.coord
        cev = acc.ev if acc is not None else None

        def ev(f, lanes):
            full = complete_groups(f, lanes, coord, node.func.name)
            if not full.any():
                return None
            sub = lanes.select(full)
            result = _product(aev(f, sub), bev(f, sub), cev(f, sub) if cev else None, t)
            store_loc(f, sub, dloc(f, sub), t, result, coord)
            return None
        return E(ty.VOID, ev, node.coord)
    return handler


def _operator(c, op: str, left: E, right: E, node: ast.Node) -> E:
    if op != "*" or left.type != right.type:
        c.error(f"invalid operands to binary expression ('{left.type}' and '{right.type}')",
                node, hint="simdgroup matrices support '*' between matrices of one type")
    t, lev, rev, coord = left.type, left.ev, right.ev, node.coord

    def ev(f, lanes):
        full = complete_groups(f, lanes, coord, "simdgroup_matrix multiplication")
        out = np.zeros((lanes.n, 2), t.elem.dtype)
        if full.any():
            sub = lanes.select(full)
            out[full] = _product(lev(f, sub), rev(f, sub), None, t)
        return out
    return E(t, ev, coord)


def _construct(c, t: ty.SimdMatrixType, args: list[E], node: ast.Node) -> E:
    """`simdgroup_float8x8(d)`: d on the diagonal, zero elsewhere."""
    if len(args) != 1:
        c.error(f"{t} takes one value (the diagonal)", node)
    value = c.convert(args[0], t.elem, node, explicit=True)
    on_diagonal = np.stack([ROW == COL, ROW == COL + 1], axis=-1)
    vev = value.ev

    def ev(f, lanes):
        lane = f.m.batch.attributes["thread_index_in_simdgroup"][lanes.idx]
        d = np.asarray(vev(f, lanes), t.elem.dtype)
        d = d.reshape(d.shape + (1,)) if d.ndim else d
        return np.where(on_diagonal[lane], d, np.zeros((), t.elem.dtype))
    return E(t, ev, node.coord)


def _make_filled(c, node: ast.Call, scope) -> E:
    targs = node.func.template_args or []
    if not targs or len(node.args) != 1:
        c.error("make_filled_simdgroup_matrix<T, 8, 8>(value) needs its type and a value", node)
    elem = c.resolve_type(targs[0], scope)
    dims = [c.const_int(a, scope, "matrix size") for a in targs[1:]]
    if elem not in (ty.HALF, ty.BFLOAT, ty.FLOAT) or dims not in ([8, 8], [8]):
        c.error("make_filled_simdgroup_matrix<T, 8, 8> needs T = half, bfloat or float", node)
    t = ty.SimdMatrixType(elem)
    value = c.convert(c.expr(node.args[0], scope), elem, node.args[0], explicit=True)
    vev = value.ev

    def ev(f, lanes):
        v = np.asarray(vev(f, lanes), elem.dtype)
        return np.broadcast_to(v.reshape(v.shape + (1,)) if v.ndim else v, (lanes.n, 2)).copy()
    return E(t, ev, node.coord)


def _transfer(store: bool):
    """simdgroup_load(m, src, elements_per_row = 8, matrix_origin = 0, transpose = false) and
    simdgroup_store(m, dst, ...): lane L moves its two elements at
    (origin.y + r) * elements_per_row + origin.x + c (r and c swapped when transposed)."""
    def handler(c, node: ast.Call, scope) -> E:
        name = node.func.name
        if not 2 <= len(node.args) <= 5:
            c.error(f"{name} takes 2 to 5 arguments", node)
        m_e = _matrix_arg(c, node.args[0], scope)
        t = m_e.type
        if not store and (m_e.loc is None or m_e.readonly):
            c.error("simdgroup_load needs a modifiable matrix variable", node.args[0])
        ptr = c.rvalue(c.expr(node.args[1], scope))
        pt = ptr.type
        if not (isinstance(pt, ty.PointerType) and pt.pointee == t.elem
                and pt.space in ("device", "threadgroup")):
            c.error(f"{name} needs a device or threadgroup pointer to '{t.elem}', not '{pt}'",
                    node.args[1])
        if store and pt.const:
            c.error("simdgroup_store cannot write through a pointer to const", node.args[1])
        extra = [c.convert(c.expr(a, scope), want, a, explicit=True) for a, want in
                 zip(node.args[2:], (ty.ULONG, ty.VectorType(ty.ULONG, 2), ty.BOOL))]
        defaults = [np.asarray(8, np.uint64), np.zeros(2, np.uint64), np.asarray(False)]
        evs = [e.ev for e in extra] + [(lambda f, lanes, v=v: v) for v in defaults[len(extra):]]
        mloc, mev, pev, coord = m_e.loc, m_e.ev, ptr.ev, node.coord
        esize = t.elem.size

        def ev(f, lanes):
            full = complete_groups(f, lanes, coord, name)
            if not full.any():
                return None
            sub = lanes.select(full)
            p = pev(f, sub)
            per_row, origin, transpose = (np.asarray(e(f, sub)) for e in evs)
            lane = f.m.batch.attributes["thread_index_in_simdgroup"][sub.idx].astype(np.int64)
            r, col = ROW[lane], COL[lane]
            per_row = per_row.astype(np.int64)
            origin = np.broadcast_to(origin.astype(np.int64), (sub.n, 2))
            transpose = np.broadcast_to(transpose, (sub.n,))
            values = mev(f, sub) if store else np.zeros((sub.n, 2), t.elem.dtype)
            base_off = np.broadcast_to(p.off, (sub.n,))
            for k in (0, 1):
                cc = col + k
                row_i = np.where(transpose, cc, r) + origin[:, 1]
                col_i = np.where(transpose, r, cc) + origin[:, 0]
                off = base_off + (row_i * per_row + col_i) * esize
                if store:
                    mem.store(f.m, p.region, sub.idx, sub.n, off, t.elem, values[:, k], coord)
                else:
                    values[:, k] = mem.load(f.m, p.region, sub.idx, sub.n, off, t.elem, coord)
            if not store:
                store_loc(f, sub, mloc(f, sub), t, values, coord)
            _tile_hint(f.m, coord, p.region.name, store, name)
            return None
        return E(ty.VOID, ev, node.coord)
    return handler


def _tile_hint(m, coord, buffer: str, store: bool, name: str) -> None:
    """An out-of-bounds tile transfer gets a hint about tiles: the memory module's generic
    `if (i < n)` does not fit a call that every lane of the SIMD-group must make."""
    finding = m.findings.get(("out-of-bounds", coord, (buffer, store)))
    if finding is not None:
        finding.hint = (f"{name} moves a whole 8x8 tile, so its origin must leave 8 rows and 8 "
                        "columns inside the matrix (origin.y + 8 <= rows, origin.x + 8 <= "
                        "elements_per_row); check the origin, or pad the matrix to a multiple "
                        "of 8. Guarding the call with an `if` would leave lanes out of it")


def _thread_elements(c, node: ast.MethodCall, scope) -> E:
    """`m.thread_elements()`: the lane's two elements, as a `thread vec<T, 2>&`."""
    if node.args:
        c.error("thread_elements() takes no arguments", node)
    base = c.expr(node.base, scope)
    if not isinstance(base.type, ty.SimdMatrixType):
        c.error(f"thread_elements() is a member of simdgroup_matrix, not of '{base.type}'",
                node)
    vt = ty.VectorType(base.type.elem, 2)  # the same (n, 2) lane values, seen as a vector
    if base.loc is None:
        return E(vt, base.ev, node.coord)
    loc, coord = base.loc, node.coord
    return E(vt, lambda f, lanes: load_loc(f, lanes, loc(f, lanes), vt, coord), coord,
             loc=loc, readonly=base.readonly, space=base.space)


SIMDGROUP_MATRIX_BUILTINS = {
    ("call", "simdgroup_multiply"): _multiply(False),
    ("call", "simdgroup_multiply_accumulate"): _multiply(True),
    ("call", "simdgroup_load"): _transfer(False),
    ("call", "simdgroup_store"): _transfer(True),
    ("call", "make_filled_simdgroup_matrix"): _make_filled,
    ("construct", "simdgroup_matrix"): _construct,
    ("operator", "simdgroup_matrix"): _operator,
    ("method", "thread_elements"): _thread_elements,
}

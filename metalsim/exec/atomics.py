"""Metal's atomic functions on `device` and `threadgroup` atomics (`atomic<T>`, `atomic_int`, ...).

Only `memory_order_relaxed` exists for them in Metal. Each operation is an indivisible
read-modify-write of the shared memory (`memory.atomic_update`); atomics never race with each
other, but a plain access to a location that is also accessed atomically does. Type rules are
Metal's: `float` atomics only in device memory and only load/store/exchange/compare-exchange and
add/sub; min/max and the bitwise operations on `int` and `uint`; 64-bit `ulong` only through
`atomic_min_explicit`/`atomic_max_explicit`, which return nothing.
"""

from __future__ import annotations

import numpy as np

from metalsim.exec import arith
from metalsim.exec import memory as mem
from metalsim.exec.compiled import E, constant
from metalsim.exec.runtime import load_loc, store_loc
from metalsim.exec.values import MemLoc
from metalsim.lang import ast
from metalsim.lang import types as ty

MEMORY_ORDERS = {"memory_order_relaxed": 0, "memory_order_consume": 1,
                 "memory_order_acquire": 2, "memory_order_release": 3,
                 "memory_order_acq_rel": 4, "memory_order_seq_cst": 5}

FETCH_OPS = {  # name: (operator for arith.binary or numpy function, ufunc for the fast path)
    "add": ("+", np.add), "sub": ("-", np.subtract), "and": ("&", np.bitwise_and),
    "or": ("|", np.bitwise_or), "xor": ("^", np.bitwise_xor),
    "min": (np.minimum, np.minimum), "max": (np.maximum, np.maximum),
}


def _atomic_object(c, node: ast.Call, scope, what: str):
    """The first argument: a pointer to an atomic in device or threadgroup memory."""
    if not node.args:
        c.error(f"{what} needs a pointer to an atomic as its first argument", node)
    obj = c.rvalue(c.expr(node.args[0], scope))
    t = obj.type
    if not (isinstance(t, ty.PointerType) and isinstance(t.pointee, ty.AtomicType)):
        c.error(f"{what} needs a pointer to an atomic object, not '{t}'", node.args[0],
                hint="outputs are atomic only with atomic_outputs=True; pass &out[i]")
    if t.space not in ("device", "threadgroup"):
        c.error(f"atomics must be in device or threadgroup memory, not '{t.space}'", node.args[0])
    return obj, t.pointee.value, t.space


def _check_order(c, node: ast.Call, scope, args: list[ast.Node]) -> None:
    for a in args:
        e = c.expr(a, scope)
        if e.const is None or int(e.const) != MEMORY_ORDERS["memory_order_relaxed"]:
            c.error("Metal atomics support only memory_order_relaxed", a)


def _check_arity(c, node: ast.Call, count: int) -> None:
    if len(node.args) != count:
        c.error(f"{node.func.name} takes {count} arguments, not {len(node.args)}", node)


def _check_type(c, node, vt: ty.ScalarType, space: str, allowed: tuple[str, ...],
                float_ok: bool) -> None:
    name = node.func.name
    if vt.name not in allowed and not (float_ok and vt == ty.FLOAT):
        c.error(f"{name} is not available for atomic<{vt}>", node,
                hint="float atomics support only load, store, exchange, compare-exchange, "
                     "add and sub" if vt == ty.FLOAT else "")
    if vt == ty.FLOAT and space != "device":
        c.error(f"float atomics are only available in device memory, not {space} memory", node,
                hint="accumulate into an atomic_int/atomic_uint, or into a device output")


def _fetch(op: str, wide: bool = False):
    """`atomic_fetch_<op>_explicit`, or with `wide` the 64-bit `atomic_<op>_explicit` on a
    device `atomic_ulong`, which returns nothing."""
    operator, ufunc = FETCH_OPS[op]

    def handler(c, node: ast.Call, scope) -> E:
        _check_arity(c, node, 3)
        obj, vt, space = _atomic_object(c, node, scope, node.func.name)
        if wide and (vt != ty.ULONG or space != "device"):
            c.error(f"{node.func.name} needs a device atomic_ulong", node,
                    hint=f"for int and uint use atomic_fetch_{op}_explicit")
        if not wide:
            integer_only = op in ("and", "or", "xor", "min", "max")
            _check_type(c, node, vt, space, ("int", "uint"), float_ok=not integer_only)
        value = c.convert(c.expr(node.args[1], scope), vt, node.args[1])
        _check_order(c, node, scope, node.args[2:])
        oev, vev, coord = obj.ev, value.ev, node.coord

        def ev(f, lanes):
            p = oev(f, lanes)
            operand = np.broadcast_to(np.asarray(vev(f, lanes), vt.dtype), (lanes.n,))

            def update(old, pos):
                if isinstance(operator, str):
                    new = arith.binary(operator, old, operand[pos], vt)
                else:
                    new = operator(old, operand[pos])
                return new, np.ones(old.shape, bool)
            old = mem.atomic_update(f.m, p.region, lanes.idx, lanes.n, p.off, vt, update,
                                    coord, fast=(ufunc, operand))
            return None if wide else old
        return E(ty.VOID if wide else vt, ev, coord)
    return handler


def _load(c, node: ast.Call, scope) -> E:
    _check_arity(c, node, 2)
    obj, vt, space = _atomic_object(c, node, scope, "atomic_load_explicit")
    _check_type(c, node, vt, space, ("int", "uint", "bool"), float_ok=True)
    _check_order(c, node, scope, node.args[1:])
    oev, coord = obj.ev, node.coord

    def ev(f, lanes):
        p = oev(f, lanes)
        return mem.atomic_update(f.m, p.region, lanes.idx, lanes.n, p.off, vt,
                                 lambda old, pos: (old, np.zeros(old.shape, bool)), coord,
                                 writes=False)
    return E(vt, ev, coord)


def _store_or_exchange(returns_old: bool):
    def handler(c, node: ast.Call, scope) -> E:
        _check_arity(c, node, 3)
        obj, vt, space = _atomic_object(c, node, scope, node.func.name)
        _check_type(c, node, vt, space, ("int", "uint", "bool"), float_ok=True)
        value = c.convert(c.expr(node.args[1], scope), vt, node.args[1])
        _check_order(c, node, scope, node.args[2:])
        oev, vev, coord = obj.ev, value.ev, node.coord

        def ev(f, lanes):
            p = oev(f, lanes)
            desired = np.broadcast_to(np.asarray(vev(f, lanes), vt.dtype), (lanes.n,))
            old = mem.atomic_update(
                f.m, p.region, lanes.idx, lanes.n, p.off, vt,
                lambda old, pos: (desired[pos], np.ones(old.shape, bool)), coord,
                reads=returns_old)
            return old if returns_old else None
        return E(vt if returns_old else ty.VOID, ev, coord)
    return handler


def _compare_exchange(c, node: ast.Call, scope) -> E:
    """`atomic_compare_exchange_weak_explicit(obj, &expected, desired, success, failure)`:
    compares bit patterns; on a mismatch the current value is written to `*expected`. This
    simulator never fails spuriously (allowed for "weak", and what loops expect to tolerate)."""
    _check_arity(c, node, 5)
    obj, vt, space = _atomic_object(c, node, scope, node.func.name)
    _check_type(c, node, vt, space, ("int", "uint", "bool"), float_ok=True)
    expected = c.rvalue(c.expr(node.args[1], scope))
    et = expected.type
    if not (isinstance(et, ty.PointerType) and et.pointee == vt and not et.const):
        c.error(f"the expected value must be a pointer to a non-const '{vt}' (e.g. &expected), "
                f"not '{et}'", node.args[1])
    desired = c.convert(c.expr(node.args[2], scope), vt, node.args[2])
    _check_order(c, node, scope, node.args[3:])
    oev, xev, dev, coord = obj.ev, expected.ev, desired.ev, node.coord
    bits = np.dtype(f"u{vt.size}")

    def ev(f, lanes):
        p, x = oev(f, lanes), xev(f, lanes)
        where = MemLoc(x.region, x.off)
        wanted = np.array(load_loc(f, lanes, where, vt, coord), vt.dtype).reshape(lanes.n)
        new_value = np.broadcast_to(np.asarray(dev(f, lanes), vt.dtype), (lanes.n,))
        success = np.zeros(lanes.n, bool)

        def update(old, pos):
            same = old.view(bits) == wanted[pos].view(bits)
            success[pos] = same
            return np.where(same, new_value[pos], old), same
        old = mem.atomic_update(f.m, p.region, lanes.idx, lanes.n, p.off, vt, update, coord)
        if not success.all():
            failed = lanes.select(~success)
            store_loc(f, failed, MemLoc(x.region, np.broadcast_to(x.off, (lanes.n,))[~success]),
                      vt, old[~success], coord)
        return success
    return E(ty.BOOL, ev, coord)


def _order_constant(value: int):
    return lambda c, node, scope: constant(value, ty.INT, node.coord)


def build_atomic_builtins() -> dict:
    table: dict = {
        ("call", "atomic_load_explicit"): _load,
        ("call", "atomic_store_explicit"): _store_or_exchange(False),
        ("call", "atomic_exchange_explicit"): _store_or_exchange(True),
        ("call", "atomic_compare_exchange_weak_explicit"): _compare_exchange,
        ("call", "atomic_min_explicit"): _fetch("min", wide=True),
        ("call", "atomic_max_explicit"): _fetch("max", wide=True),
    }
    for op in FETCH_OPS:
        table[("call", f"atomic_fetch_{op}_explicit")] = _fetch(op)
    for name, value in MEMORY_ORDERS.items():
        table[("name", "", name)] = _order_constant(value)
    return table


ATOMIC_BUILTINS = build_atomic_builtins()

"""Built-in names the compiler resolves specially: barriers, `mem_flags`, and MSL constants.

Math functions live in `mathlib`; MLX's `utils.h` helpers are MSL source in `prelude.py`.
Each entry maps a key — `("call", name)` or `("name", qualifier, name)` — to a handler
`handler(compiler, node, scope) -> E`.
"""

from __future__ import annotations

import numpy as np

from metalsim.exec.atomics import ATOMIC_BUILTINS
from metalsim.exec.compiled import E, constant
from metalsim.exec.machine import Lanes, Machine
from metalsim.exec.simd import SIMD_BUILTINS
from metalsim.exec.simdgroup_matrix import SIMDGROUP_MATRIX_BUILTINS
from metalsim.lang import ast, limits
from metalsim.lang import types as ty

MEM_FLAGS = {"mem_none": 0, "mem_device": 1, "mem_threadgroup": 2, "mem_texture": 4,
             "mem_threadgroup_imageblock": 8, "mem_object_data": 16}

_F32 = np.finfo(np.float32)
_F16 = np.finfo(np.float16)
FLOAT_CONSTANTS = {
    "INFINITY": np.inf, "NAN": np.nan, "HUGE_VALF": np.inf, "MAXFLOAT": float(_F32.max),
    "FLT_MAX": float(_F32.max), "FLT_MIN": float(_F32.tiny), "FLT_EPSILON": float(_F32.eps),
    "M_E_F": np.e, "M_LOG2E_F": np.log2(np.e), "M_LOG10E_F": np.log10(np.e),
    "M_LN2_F": np.log(2), "M_LN10_F": np.log(10), "M_PI_F": np.pi, "M_PI_2_F": np.pi / 2,
    "M_PI_4_F": np.pi / 4, "M_1_PI_F": 1 / np.pi, "M_2_PI_F": 2 / np.pi,
    "M_2_SQRTPI_F": 2 / np.sqrt(np.pi), "M_SQRT2_F": np.sqrt(2), "M_SQRT1_2_F": np.sqrt(0.5),
}
HALF_CONSTANTS = {"HALF_MAX": float(_F16.max), "HALF_MIN": float(_F16.tiny),
                  "HALF_EPSILON": float(_F16.eps), "MAXHALF": float(_F16.max)} | {
    name[:-2] + "_H": value for name, value in FLOAT_CONSTANTS.items()
    if name.startswith("M_")}
INT_CONSTANTS = {
    "CHAR_BIT": (8, ty.INT), "SCHAR_MAX": (127, ty.INT), "SCHAR_MIN": (-128, ty.INT),
    "UCHAR_MAX": (255, ty.INT), "SHRT_MAX": (32767, ty.INT), "SHRT_MIN": (-32768, ty.INT),
    "USHRT_MAX": (65535, ty.INT), "INT_MAX": (2**31 - 1, ty.INT), "INT_MIN": (-2**31, ty.INT),
    "UINT_MAX": (2**32 - 1, ty.UINT), "LONG_MAX": (2**63 - 1, ty.LONG),
    "LONG_MIN": (-2**63, ty.LONG), "ULONG_MAX": (2**64 - 1, ty.ULONG),
}


def barrier(m: Machine, lanes: Lanes, flags: int, coord) -> None:
    """`threadgroup_barrier`: every live thread of a threadgroup must arrive together.

    Threads that returned from the kernel no longer take part (Apple silicon). A threadgroup
    whose live threads are only partly here has a divergent barrier. Barriers whose flags order
    threadgroup (device) memory start a new race-detection epoch for that memory.
    """
    b = m.batch
    if lanes.is_all and m.alive.all():   # every thread of every threadgroup is here
        m.new_epoch(np.ones(b.tg_count, bool), bool(flags & MEM_FLAGS["mem_threadgroup"]),
                    bool(flags & MEM_FLAGS["mem_device"]))
        m.count("barriers", lanes.idx)
        return
    here = b.tg_local[lanes.idx]
    arrived = np.bincount(here, minlength=b.tg_count)
    live = np.bincount(b.tg_local[m.alive], minlength=b.tg_count)
    divergent = (arrived > 0) & (arrived != live)
    if divergent.any():
        present = np.zeros(b.size, bool)
        present[lanes.idx] = True
        missing = np.flatnonzero(m.alive & ~present & divergent[b.tg_local])
        g = int(np.flatnonzero(divergent)[0])
        m.report("divergent-barrier", "error",
                 "threadgroup_barrier is not reached by every thread of the threadgroup",
                 coord, missing,
                 detail=f"{arrived[g]} of the {live[g]} live threads of threadgroup "
                        f"{int(b.tg_ids[g])} reached it; the listed threads did not",
                 hint="a barrier must be reached by all threads that have not returned: move "
                      "it out of the condition, or make the condition the same for the whole "
                      "threadgroup")
    m.new_epoch(arrived > 0, bool(flags & MEM_FLAGS["mem_threadgroup"]),
                bool(flags & MEM_FLAGS["mem_device"]))
    m.count("barriers", lanes.idx)


def simd_barrier(m: Machine, lanes: Lanes, flags: int, coord) -> None:
    """`simdgroup_barrier`: every live thread of a SIMD-group arrives together; with memory
    flags it orders that memory among the SIMD-group's threads (a new SIMD-group epoch)."""
    b = m.batch
    here = b.simd_global[lanes.idx]
    groups = int(b.simd_global[-1]) + 1
    arrived = np.bincount(here, minlength=groups)
    live = np.bincount(b.simd_global[m.alive], minlength=groups)
    divergent = (arrived > 0) & (arrived != live)
    if divergent.any():
        present = np.zeros(b.size, bool)
        present[lanes.idx] = True
        missing = np.flatnonzero(m.alive & ~present & divergent[b.simd_global])
        m.report("divergent-barrier", "error",
                 "simdgroup_barrier is not reached by every thread of the SIMD-group", coord,
                 missing, hint="a SIMD-group barrier must be reached by all threads of the "
                               "SIMD-group that have not returned")
    m.new_epoch(arrived > 0, bool(flags & MEM_FLAGS["mem_threadgroup"]),
                bool(flags & MEM_FLAGS["mem_device"]), simdgroups=True)


def _barrier_call(threadgroup_scope: bool):
    def handler(c, node: ast.Call, scope) -> E:
        if len(node.args) != 1:
            c.error(f"{node.func.name} takes one argument (mem_flags)", node)
        flags = c.convert(c.expr(node.args[0], scope), ty.UINT, node.args[0], explicit=True)
        if flags.const is None:
            c.error("the barrier's mem_flags must be a constant", node.args[0])
        value, coord = int(flags.const), node.coord
        if threadgroup_scope:
            def ev(f, lanes):
                barrier(f.m, lanes, value, coord)
        else:
            def ev(f, lanes):
                simd_barrier(f.m, lanes, value, coord)
        return E(ty.VOID, ev, coord)
    return handler


def _limits_type(c, node: ast.Call | ast.Name, scope) -> ty.ScalarType:
    """The T of `numeric_limits<T>::member`."""
    name = node.func if isinstance(node, ast.Call) else node
    args = name.template_args or []
    t = c.resolve_type(args[0], scope) if len(args) == 1 else None
    if not isinstance(t, ty.ScalarType) or t.enum is not None:
        c.error("numeric_limits<T> needs one scalar type argument", node)
    return t


def _numeric_limits_member(c, node: ast.Call, scope) -> E:
    """`numeric_limits<T>::max()` and the other member functions of Metal's numeric_limits."""
    name = node.func
    t = _limits_type(c, node, scope)
    if name.name in limits.BOOL_CONSTANTS + limits.INT_CONSTANTS:
        shown = "bool" if name.name in limits.BOOL_CONSTANTS else "int"
        c.error(f"called object type 'const {shown}' is not a function or function pointer",
                node, hint=f"'numeric_limits<{t}>::{name.name}' is a constant: drop the '()'")
    if node.args:
        c.error(f"numeric_limits<T>::{name.name}() takes no arguments", node)
    value = limits.limit_functions(t).get(name.name)
    if value is None:
        c.error(f"no member named '{name.name}' in 'numeric_limits<{t}>'", node)
    return constant(value, t, node.coord)


def _numeric_limits_constant(c, node: ast.Name, scope) -> E:
    """`numeric_limits<T>::has_infinity` and the other static constexpr data members."""
    t = _limits_type(c, node, scope)
    if node.name in limits.FUNCTIONS:
        c.error(f"reference to non-static member function '{node.name}' must be called", node,
                width=len(node.name), hint=f"call it: 'numeric_limits<{t}>::{node.name}()'")
    value = limits.limit_constants(t).get(node.name)
    if node.name in limits.UNMODELLED:
        c.error(f"'numeric_limits<{t}>::{node.name}' is not supported by metalsim", node,
                width=len(node.name), hint="its members are: " + ", ".join(
                    limits.BOOL_CONSTANTS + limits.INT_CONSTANTS) + " and the functions "
                    + ", ".join(f"{f}()" for f in limits.FUNCTIONS))
    if value is None:
        c.error(f"no member named '{node.name}' in 'numeric_limits<{t}>'", node,
                width=len(node.name))
    return constant(value, ty.BOOL if isinstance(value, bool) else ty.INT, node.coord)


def _type_trait(trait: str, args: list[ty.Type]) -> bool | None:
    """The value of `metal::<trait>_v<args...>` (as `std::`'s, with Metal's half and bfloat
    counted as floating-point), or None for a trait metalsim does not know."""
    if trait == "is_same":
        return args[0] == args[1] if len(args) == 2 else None
    if len(args) != 1:
        return None
    t = args[0]
    integral = isinstance(t, ty.ScalarType) and t.kind in ("int", "bool")
    floating = isinstance(t, ty.ScalarType) and t.kind == "float"
    return {"is_integral": integral, "is_floating_point": floating,
            "is_arithmetic": integral or floating,
            "is_signed": floating or (integral and t.kind == "int" and t.signed),
            "is_unsigned": integral and not (t.kind == "int" and t.signed)}.get(trait)


def _type_trait_value(c, node, scope) -> E:
    """`is_same_v<T, U>` (a name) and `is_same<T, U>::value` (a qualified name)."""
    trait = node.qualifier if node.qualifier in TYPE_TRAITS else node.name.removesuffix("_v")
    if node.qualifier in TYPE_TRAITS and node.name != "value":
        c.error(f"no member named '{node.name}' in '{trait}<...>'", node)
    args = [c.resolve_type(a, scope) for a in node.template_args or []]
    if trait == "is_convertible" and len(args) == 2:
        return constant(c.implicitly_convertible(*args, node.coord), ty.BOOL, node.coord)
    value = _type_trait(trait, args)
    if value is None:
        two = trait in ("is_same", "is_convertible")
        c.error(f"'{trait}' takes {'two' if two else 'one'} type argument(s)", node)
    return constant(value, ty.BOOL, node.coord)


TYPE_TRAITS = ("is_same", "is_integral", "is_floating_point", "is_signed", "is_unsigned",
               "is_arithmetic", "is_convertible")


def _trait_value(c, arg: ast.Node, scope) -> bool:
    """`arg::value` for a trait named as a type: Metal's built-in ones (`is_same<T, int>`) or
    a struct with a static `value` (`bool_constant<...>`)."""
    if isinstance(arg, ast.Name) and arg.template_args is not None and not arg.qualifier:
        arg = ast.NamedType(arg.coord, arg.name, arg.template_args)   # parsed as a value
    if not isinstance(arg, ast.NamedType):
        c.error("expected a type trait such as 'is_same<T, U>'", arg)
    if arg.name in TYPE_TRAITS and arg.member_of is None:
        name = ast.Name(arg.coord, "value", arg.name, arg.template_args,
                        args_on_qualifier=True)
        return bool(_type_trait_value(c, name, scope).const)
    e = c.expr(ast.Name(arg.coord, "value", owner=arg), scope)
    if e.const is None:
        c.error(f"'{arg.name}::value' is not a constant", arg)
    return bool(e.const)


def _logical_trait(any_of: bool):
    """Metal's internal `_disjunction<B...>::value` (any `B::value`) and `_conjunction`
    (all), as MLX's atomic.h uses them."""
    def handler(c, node, scope) -> E:
        if node.name != "value":
            c.error(f"no member named '{node.name}' in '{node.qualifier}<...>'", node)
        values = [_trait_value(c, a, scope) for a in node.template_args or []]
        return constant(any(values) if any_of else all(values), ty.BOOL, node.coord)
    return handler


def _is_empty(c, node, scope) -> E:
    """clang's `__is_empty(T)`: whether T is a class with no data members (nor bases with
    any)."""
    t = c.resolve_type(node.args[0], scope)
    return constant(isinstance(t, ty.StructType) and not t.members, ty.BOOL, node.coord)


def _function_constant_defined(c, node, scope) -> E:
    """`is_function_constant_defined(name)`: whether the pipeline gave it a value (never, for
    mx.fast.metal_kernel; `metalsim.dispatch(function_constants=...)` can)."""
    named = node.args[0] if len(node.args) == 1 else None
    defined = isinstance(named, ast.Name) and named.name in c.defined_function_constants
    if not defined and (not isinstance(named, ast.Name) or getattr(
            scope.lookup(named.name), "kind", None) != "function_constant"):
        c.error("the argument of 'is_function_constant_defined' must be a function constant",
                node)
    return constant(defined, ty.BOOL, node.coord)


def _make_uniform(c, node, scope) -> E:
    """`make_uniform(x)`: x, as a `uniform<T>` (which metalsim computes as T)."""
    if len(node.args) != 1:
        c.error("'make_uniform' takes one argument", node)
    return c.rvalue(c.expr(node.args[0], scope))


def _named_constant(value, t):
    return lambda c, node, scope: constant(value, t, node.coord)


def _fence(c, node, scope) -> E:
    c.error("'atomic_thread_fence' (Metal 3.2) is not supported by metalsim", node.func,
            width=len("atomic_thread_fence"),
            hint="metalsim does not model memory fences between threads; order memory with "
                 "threadgroup_barrier(...), or communicate through atomics")


def build_builtins() -> dict:
    table: dict = {
        ("call", "threadgroup_barrier"): _barrier_call(True),
        ("call", "simdgroup_barrier"): _barrier_call(False),
        ("qualified_call", "numeric_limits"): _numeric_limits_member,
        ("qualified_name", "numeric_limits"): _numeric_limits_constant,
        ("call", "atomic_thread_fence"): _fence,
        ("call", "__is_empty"): _is_empty,
        ("call", "is_function_constant_defined"): _function_constant_defined,
        ("call", "make_uniform"): _make_uniform,
        ("qualified_name", "_disjunction"): _logical_trait(True),
        ("qualified_name", "_conjunction"): _logical_trait(False),
    }
    for trait in TYPE_TRAITS:
        table[("name", "", f"{trait}_v")] = _type_trait_value
        table[("qualified_name", trait)] = _type_trait_value
    for name, value in MEM_FLAGS.items():
        table[("name", "mem_flags", name)] = _named_constant(value, ty.UINT)
    for name, value in FLOAT_CONSTANTS.items():
        table[("name", "", name)] = _named_constant(value, ty.FLOAT)
    for name, value in HALF_CONSTANTS.items():
        table[("name", "", name)] = _named_constant(value, ty.HALF)
    for name, (value, t) in INT_CONSTANTS.items():
        table[("name", "", name)] = _named_constant(value, t)
    table |= ATOMIC_BUILTINS
    table |= SIMDGROUP_MATRIX_BUILTINS
    table |= SIMD_BUILTINS
    return table


BUILTINS = build_builtins()

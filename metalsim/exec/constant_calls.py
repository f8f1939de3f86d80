"""Calls of constexpr functions in constant expressions: the `ConstantCallCompiler` part of
`Compiler`.

`getn<sq(5)>()`, `int a[sq(2)];`, `constexpr int k = sq(5);`: a call of a function declared
`constexpr` whose arguments are all constants is a constant (C++ [expr.const]). Its value is
what the compiled call computes, run for one thread on a machine of its own, at compile time.
A call that cannot run so (it faults, reads something undefined or runs too long) is not a
constant, as it would not be one in C++, and stays a call made when the kernel runs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from metalsim.exec.compiled import E
from metalsim.exec.machine import Batch, KernelStop, Lanes, Machine, StepLimitExceeded
from metalsim.exec.values import Frame
from metalsim.lang import ast
from metalsim.lang.types import ScalarType

# Statements one constant call may run (clang's -fconstexpr-steps is 1,048,576).
CONSTANT_STEPS = 1 << 20


def _one_thread() -> Batch:
    zero = np.zeros(1, np.int64)
    return Batch(size=1, tid=zero, tg_global=zero, tg_local=zero, tg_count=1, tg_ids=zero,
                 tg_sizes=np.ones(1, np.int64), simd_global=zero,
                 attributes={"simdgroup_index_in_threadgroup": zero,
                             "thread_index_in_simdgroup": zero},
                 consecutive=True)


class ConstantCallCompiler:
    """Constant-call methods of `Compiler` (which supplies `sm`)."""

    def constant_call(self, fdef: ast.FunctionDef, call: E, args: list[E]) -> E:
        """`call` of `fdef` with `args`, with its value as a constant where it is one."""
        if not (fdef.constexpr and isinstance(call.type, ScalarType)
                and all(a.const is not None for a in args)):
            return call
        m = Machine((1, 1, 1), self.sm, CONSTANT_STEPS, trace=False)
        m.start_batch(_one_thread())
        try:
            value = call.ev(Frame(m, 0), Lanes(slice(None), 1))
        except (KernelStop, StepLimitExceeded):
            return call
        if m.findings:   # a fault or an undefined value: no constant
            return call
        c = np.asarray(value, call.type.dtype).reshape(-1)[0]
        return replace(call, ev=lambda f, lanes: c, const=c)

"""What `metalsim.patch()` costs outside the kernels: entering and leaving it, and an MLX
operation's call inside it (where functions that take a stream or device are wrapped so that
`mx.gpu` means the CPU) against the same call outside.

Run: python benchmarks/bench_patch.py [REPEAT]

Each figure is the best of REPEAT (5 by default) timings of a loop.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mlx.core as mx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import best_of  # noqa: E402

import metalsim  # noqa: E402

LOOP = 2_000


def enter_and_leave() -> None:
    for _ in range(LOOP // 10):
        with metalsim.patch():
            pass


def operations(stream: object = None) -> None:
    a, b = mx.ones(4), mx.ones(4)
    for _ in range(LOOP):
        mx.add(a, b, stream=stream)
        a.sum(stream=stream)


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with metalsim.patch():
        pass   # the first patch looks MLX's signatures up once
    enter = best_of(enter_and_leave, repeat) / (LOOP // 10)
    outside = best_of(operations, repeat) / (2 * LOOP)
    with metalsim.patch():
        inside = best_of(operations, repeat) / (2 * LOOP)
        inside_gpu = best_of(lambda: operations(mx.gpu), repeat) / (2 * LOOP)
    print(f"enter and leave metalsim.patch():            {enter * 1e3:7.3f} ms")
    print(f"an MLX call (add, sum), outside the patch:   {outside * 1e6:7.2f} us")
    print(f"the same call inside the patch:              {inside * 1e6:7.2f} us")
    print(f"inside the patch, with stream=mx.gpu:        {inside_gpu * 1e6:7.2f} us")


if __name__ == "__main__":
    main()

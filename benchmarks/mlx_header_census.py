"""How many of the installed MLX's Metal kernel headers metalsim compiles (alone, or after
utils.h and what MLX's .metal sources include before them, with a trivial kernel body), and
the first error of each one that does not
(`tests/metalsim/mlx_header_census.py`; the test suite pins the same list in
tests/metalsim/test_mlx_kernel_headers.py).

Run: python benchmarks/mlx_header_census.py
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "metalsim"))

import mlx_header_census  # noqa: E402


def main() -> None:
    started = time.monotonic()
    results = mlx_header_census.census()
    left = {header: why for header, why in results.items() if why is not None}
    print(f"{len(results) - len(left)} of {len(results)} MLX kernel headers compile "
          f"({time.monotonic() - started:.0f} s)")
    for header, why in left.items():
        print(f"  {header}: {why}")
    print("causes, by how many headers stop at them:")
    for cause, n in Counter(why.split(": ", 1)[1] for why in left.values()).most_common():
        print(f"  {n:3}  {cause}")


if __name__ == "__main__":
    main()

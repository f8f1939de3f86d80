"""How long `python -m puzzles list` takes against importing MLX and numpy alone.

Run: python benchmarks/bench_cli.py [RUNS]

Each command runs RUNS times (5 by default), the two alternating, and its CPU time (user +
system of the child process) is the best of its runs. The CLI imports neither the simulator
nor nbformat for `list`, so it should stay within 2x of the bare imports.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

COMMANDS = {
    "python -m puzzles list": [sys.executable, "-m", "puzzles", "list"],
    'python -c "import mlx.core, numpy"': [sys.executable, "-c", "import mlx.core, numpy"],
}


def cpu_seconds(command: list[str]) -> float:
    """CPU seconds of one run of `command` (its own, not this process's)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                   cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    best = dict.fromkeys(COMMANDS, float("inf"))
    for _ in range(runs):
        for name, command in COMMANDS.items():
            best[name] = min(best[name], cpu_seconds(command))
    for name, seconds in best.items():
        print(f"{name:36s} {seconds:.3f} s CPU (best of {runs})")
    cli, bare = best.values()
    print(f"ratio {cli / bare:.2f}x (target at most 2x)")


if __name__ == "__main__":
    main()

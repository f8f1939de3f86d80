"""How long tests/test_provenance.py's copy check takes: indexing the installed sources, then
scanning every tracked file.

Run: python benchmarks/bench_provenance.py [RUNS]

Each phase is timed RUNS times (3 by default) in CPU seconds of this process, and the best run
is printed with the number of files and windows, so the figure says what was compared. The
corpus packages count only where installed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_provenance  # noqa: E402  (the test module's own helpers, as the test runs them)
from provenance import file_lines  # noqa: E402


def timed(action, *args):
    start = time.process_time()
    result = action(*args)
    return time.process_time() - start, result


def scan(index) -> tuple[int, int]:
    """(files scanned, copies found) over every tracked file."""
    paths = test_provenance.tracked_files()
    copies = 0
    for path in paths:
        lines = file_lines(test_provenance.ROOT / path)
        if lines is not None:
            copies += len(index.copies(path, lines))
    return len(paths), copies


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    best_index = best_scan = float("inf")
    for _ in range(runs):
        test_provenance.installed_sources.cache_clear()
        seconds, index = timed(test_provenance.installed_sources)
        best_index = min(best_index, seconds)
        seconds, (files, copies) = timed(scan, index)
        best_scan = min(best_scan, seconds)
    packages = [name for name in test_provenance.CORPUS_PACKAGES
                if test_provenance.package_dir(name) is not None]
    print(f"index: {index.files} source files (MLX headers + {', '.join(packages) or 'no corpus'}"
          f"), {index.window_count:,} windows: {best_index:.2f} s CPU (best of {runs})")
    print(f"scan:  {files} tracked files, {copies} copies: {best_scan:.2f} s CPU (best of {runs})")


if __name__ == "__main__":
    main()

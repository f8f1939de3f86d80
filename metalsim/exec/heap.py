"""Keep freed memory in the process's heap for reuse, where the C library allows tuning it.

A launch allocates and frees lane-sized numpy temporaries at every statement (128 KiB to 8 MiB
each). With glibc's default heuristics the heap is trimmed back to the system whenever more
than twice the largest recently freed block is free at its top, so the next statement faults
the same pages in again: for a 128² tiled matmul a quarter of its CPU time went to those page
faults (system time), and its own work ran a third slower beside them.

`keep_freed_memory` sets glibc's malloc to the state its own dynamic heuristic reaches after a
32 MiB block was freed (blocks under 32 MiB come from the heap, which is trimmed once 64 MiB are
free at its top), once per process, before the first launch. Settings a user made through
glibc's environment variables are left alone, and elsewhere (macOS, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import os

# glibc's mallopt parameters (malloc.h) and the values of its dynamic upper bound on 64-bit
# (DEFAULT_MMAP_THRESHOLD_MAX; the trim threshold it then uses is twice that).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                 "MALLOC_MMAP_MAX_")

_tuned: bool | None = None   # None: not tried yet


def keep_freed_memory() -> bool:
    """Tune glibc's malloc as the module docstring says (tried once); whether it is tuned."""
    global _tuned
    if _tuned is None:
        _tuned = _tune()
    return _tuned


def _tune() -> bool:
    if (any(name in os.environ for name in USER_SETTINGS)
            or "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", "")):
        return False
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    # glibc only: other C libraries' mallopt take other parameters, or do nothing
    if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
        return False
    mallopt = libc.mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))

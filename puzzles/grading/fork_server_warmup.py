"""Imported by the grader's fork server only (see `sandbox.context`), after the grader itself:
everything a worker would otherwise import and build for its first kernel (the simulator's
executor and compiler, the CUDA translator, every chapter's puzzles, the parsed prelude) is
done once here, so that each worker forked from the server starts with it instead of paying
for it per submission (about 0.4 s of CPU each, more where bytecode is not cached; see the
README's grading numbers). Nothing here runs MLX or touches a GPU (CUDA, like MLX, is not
safe to fork once used): modules are imported, not started.

Last, the server's objects are moved out of the garbage collector's reach (`gc.freeze`), so
that a worker's collections do not write to, and so copy, the pages it shares with the
server."""

import gc
import importlib

# Imported by the workers on first use (the executor only when a kernel runs; numpy's random
# and masked arrays by the cases and the checks' references; the CUDA translator by
# `checking.cuda_available`).
LAZY_IMPORTS = ("metalsim.exec.launch", "metalsim.cuda", "numpy.random", "numpy.ma")

for name in LAZY_IMPORTS:
    importlib.import_module(name)
launch = importlib.import_module("metalsim.exec.launch")
for fast_math in (False, True):
    launch.parsed_prelude(fast_math)
importlib.import_module("puzzles.catalog").all_puzzles()  # imports every chapter
gc.freeze()

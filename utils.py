"""The learner-facing harness (`MetalKernel`, `MetalProblem`); built on `metalsim`."""

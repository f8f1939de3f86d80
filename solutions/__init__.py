"""Reference kernels: every puzzle's solution and each notebook's real kernel."""

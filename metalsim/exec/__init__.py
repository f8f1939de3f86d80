"""The back end: compiling the AST to lane-vectorized closures and running them."""

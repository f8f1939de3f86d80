"""The classroom grader: assignment files, a static reader of notebook code, sandboxed workers,
batch grading, gradebook outputs, integrity checks and release builds (`python -m puzzles
grade`, `python -m puzzles build --release`)."""

"""The classroom grader: assignment files, intake of submissions, a static reader of notebook
code, per-submission hidden-case seeds, sandboxed workers, batch grading, what students may
see of a verdict, gradebook outputs, similarity reports, text safety and release builds
(`python -m puzzles grade`, `python -m puzzles build --release`)."""

"""The classroom grader: assignment files, intake of submissions, a static reader of notebook
code, per-submission hidden-case seeds, sandboxed workers, batch grading, the journal, atomic
writes, what students may see of a verdict, gradebook outputs and results.json, the late
policy, overrides, LMS exports, Gradescope, PrairieLearn and GitHub Classroom, similarity
reports, text safety and release builds (`python -m puzzles grade`, `gradescope`,
`prairielearn`, `classroom-workflow`, `build --release`)."""

"""What a student may learn of a verdict: everything about the cases they can see, and of a
hidden case only what its kind, its line and a fixed short reason say.

A kernel controls what its own diagnostics print (the element it wrote out of bounds, the
threads that raced, the values it produced, how many positions were wrong, how many accesses a
thread made), so any of those, shown for a hidden case, can carry the hidden inputs out: a Map
kernel writing `out[100 + code]` with `code` built from `a[0..3]` reads the case back from
"wrote element 319239". `student_summary` keeps the visible cases' details (their inputs are
public) and reduces the hidden cases to what the grader itself chose to say.
"""

from __future__ import annotations

from puzzles.checking import COUNT_LABELS, COUNT_NAMES, CaseResult, CheckResult

# One fixed phrase per diagnostic kind (metalsim.diagnostics.Diagnostic lists them): what a
# student sees of a hidden case's finding, whatever the finding's own message says.
SHORT_REASONS = {
    "out-of-bounds": "an access outside a buffer",
    "race": "threads accessed the same element without synchronisation",
    "divergent-barrier": "a barrier not reached by every thread of the threadgroup",
    "uninitialized-read": "a read of memory never written",
    "division-by-zero": "an integer division by zero",
    "shift-out-of-range": "a shift by more bits than the type has",
    "step-limit": "the simulation ran past its step limit (a runaway loop?)",
    "resource-limit": "the kernel needs more memory than the simulator allows",
    "inactive-lane-read": "a read from an inactive SIMD lane",
    "inactive-lanes": "a SIMD-group operation with lanes in another branch",
    "invalid-lane": "a SIMD lane index out of range",
    "invalid-argument": "an invalid argument to a built-in function",
    "non-uniform-argument": "an argument that must be the same on every lane differs",
    "divergent-simdgroup": "a SIMD-group operation not reached by every lane",
    "unconfirmed-behavior": "behaviour the simulator cannot confirm",
    "compile": "a compile error",
}
UNKNOWN_REASON = "a fault"


def is_hidden(case: CaseResult) -> bool:
    return case.label.startswith("hidden")


def student_summary(result: CheckResult) -> dict[str, object]:
    """The reason, diagnostics, counts and warning count a student may see of `result`."""
    visible = [c for c in result.cases if not is_hidden(c)]
    hidden = [c for c in result.cases if is_hidden(c)]
    counts = {n: max((c.counts.get(n, 0) for c in visible), default=0) for n in COUNT_NAMES}
    shown = {id(d) for c in visible for d in c.diagnostics}
    diagnostics = [d.render() for d in result.diagnostics if id(d) in shown]
    seen_visible = {(d.kind, d.severity, d.message, d.line) for c in visible
                    for d in c.diagnostics}
    warnings = sum(d.severity == "warning" for d in result.diagnostics if id(d) in shown)
    briefs: list[str] = []
    for case in hidden:
        for d in case.diagnostics:
            if (d.kind, d.severity, d.message, d.line) in seen_visible:
                continue
            brief = hidden_diagnostic(case, d.kind, d.severity, d.line)
            if brief not in briefs:
                briefs.append(brief)
                warnings += d.severity == "warning"
    return {"reason": _reason(result, visible, counts), "diagnostics": diagnostics + briefs,
            "counts": counts, "warnings": warnings}


def hidden_diagnostic(case: CaseResult, kind: str, severity: str, line: int | None) -> str:
    """`hidden case 2: error: out-of-bounds (line 3): an access outside a buffer`."""
    where = f" (line {line})" if line is not None else ""
    return (f"{case.name}: {severity}: {kind}{where}: "
            f"{SHORT_REASONS.get(kind, UNKNOWN_REASON)}")


def _reason(result: CheckResult, visible: list[CaseResult], counts: dict[str, int]) -> str:
    if result.status == "pass":
        return ""
    bad = next((c for c in result.cases
                if c.faulted or c.mismatches or c.metal_mismatches), None)
    if bad is not None and is_hidden(bad):
        first = next((d for d in bad.diagnostics if d.severity == "error"), None)
        if first is not None:
            where = f" (line {first.line})" if first.line is not None else ""
            return (f"{first.kind}{where} on {bad.name}: "
                    f"{SHORT_REASONS.get(first.kind, UNKNOWN_REASON)}")
        if bad.faulted:
            return f"the kernel failed to run on {bad.name}"
        gpu = "the real GPU gave " if not bad.mismatches else ""
        return f"{gpu}wrong values on {bad.name}"
    if result.status == "over-budget":
        # The visible cases' counts are the student's to see; a hidden case's only by name.
        shown = [f"{COUNT_LABELS[n].lower()} {counts[n]} > {limit}"
                 for n, limit in result.budget.items() if counts.get(n, 0) > limit]
        hidden = [COUNT_LABELS[n].lower() for n, limit in result.budget.items()
                  if counts.get(n, 0) <= limit
                  and max((c.counts.get(n, 0) for c in result.cases), default=0) > limit]
        parts = [f"over budget: {', '.join(shown)}"] if shown else []
        parts += [f"over budget on a hidden case: {', '.join(hidden)}"] if hidden else []
        return f"correct, but {'; '.join(parts)} (max per thread)"
    return result.reason


STUDENT_FIELDS = ("puzzle", "title", "status", "reason", "counts", "budget", "diagnostics",
                  "note", "warnings", "notebook", "notice")


def student_view(row: dict[str, object]) -> dict[str, object]:
    """What a student may see of a grader row: no cases (no hidden input or expected output),
    no seed, and of the hidden cases only what `student_summary` kept."""
    shown = {**row, **row.get("student", {})}  # type: ignore[dict-item]
    return {key: shown[key] for key in STUDENT_FIELDS if key in shown}

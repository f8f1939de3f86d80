"""Grading one submission in a worker process of its own, so that no submission can stall the
grader or take another's memory.

The worker is forked from a server process that has imported the grader and the simulator and
built what every kernel needs (`fork_server_warmup`; it never runs MLX, which is not safe to
fork once used), so starting one costs milliseconds and each submission pays only for itself. It
caps its own address space with `resource.setrlimit` before reading the notebook, then reports
each step on a pipe: the puzzles it will grade and their kernels, then "start" and the row of
each puzzle. The parent gives every step a wall-time limit; when one is exceeded it kills the
worker, records that puzzle as "timeout", and the submission waits for another turn (see
`batch`) to grade the puzzles left in a fresh worker. A worker that dies records its puzzle
as "crashed" (and the submission waits likewise); a simulation that runs out of the capped
memory is "memory-limit". The submission's budget counts the time its workers ran, whatever
the turns.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.connection
import resource
import signal
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.context import BaseContext
from pathlib import Path

from puzzles.grader import (
    GradeError,
    grade_puzzle,
    limit_row,
    parse_notebook,
    plan,
    read_submission,
)
from puzzles.grading.assignment import Limits
from puzzles.grading.intake import IntakeError, Submission, read_notebooks


@dataclass
class Outcome:
    """What grading one submission gave: rows in grading order, the kernel read for each
    puzzle (for the integrity checks), `error` when it could not be graded, and the seconds
    its workers ran."""

    submission: Submission
    rows: list[dict[str, object]] = field(default_factory=list)
    kernels: dict[int, str] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0

    @property
    def status(self) -> str:
        """"graded", "not graded", "refused" (see `intake`) or "missing" (on the roster,
        nothing handed in)."""
        if self.submission.missing:
            return "missing"
        if self.submission.refused:
            return "refused"
        return "not graded" if self.error else "graded"


# What the fork server imports, in order, before it forks any worker.
FORK_SERVER_PRELOAD = ("puzzles.grading.fork_server_signals", __name__,
                       "puzzles.grading.fork_server_warmup")


def context() -> BaseContext:
    """The multiprocessing context workers are started from (a fork server with the grader
    already imported and warmed up, see `fork_server_warmup`)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(FORK_SERVER_PRELOAD))
    return ctx


class SubmissionRun:
    """The parent's side of grading one submission: start the worker, take its messages, and
    enforce the limits. `done` once every puzzle has a row (or the submission failed);
    `waiting` when a puzzle was stopped and others are left: it holds no worker until
    `resume`."""

    def __init__(self, submission: Submission, assigned: list[int] | None, seed: int,
                 limits: Limits, ctx: BaseContext) -> None:
        self.submission = submission
        self.assigned = assigned
        self.seed = seed
        self.limits = limits
        self.ctx = ctx
        self.budget_end = math.inf
        self.peak_bytes = 0
        self.order: list[int] | None = None
        self.rows: dict[int, dict[str, object]] = {}
        self.kernels: dict[int, str] = {}
        self.error = ""
        self.done = False
        self.waiting = False
        self.current: int | None = None
        self.held = 0.0  # seconds its earlier workers ran
        self.holding = False
        self.resume()

    def resume(self) -> None:
        """Start a worker for the puzzles without a row, within what is left of the budget."""
        self.waiting = False
        self._spawn()
        # The budget counts once the worker runs (not while the fork server starts up).
        self.holding, self.held_since = True, time.monotonic()
        self.budget_end = self.held_since + self.limits.submission_seconds - self.held
        self._next_deadline()

    def _spawn(self) -> None:
        receiver, sender = self.ctx.Pipe(duplex=False)
        self.process = self.ctx.Process(
            target=work, daemon=True,
            args=(sender, self.submission.files, self.assigned, self.seed, self.submission.id,
                  self.limits.memory_bytes, frozenset(self.rows)))
        self.process.start()
        sender.close()
        self.connection = receiver
        self.current = None

    def _next_deadline(self) -> None:
        """The current step's limit, never past the submission's budget."""
        self.deadline = min(time.monotonic() + self.limits.seconds, self.budget_end)

    def receive(self) -> None:
        """Handle every message waiting on the pipe (or the worker's death)."""
        while not self.done and not self.waiting:
            try:
                if not self.connection.poll():
                    return
                message = self.connection.recv()
            except (EOFError, OSError):
                self._died()
                return
            self._handle(message)

    def _handle(self, message: tuple) -> None:
        kind = message[0]
        if kind == "read":
            self.order, kernels = message[1], message[2]
            self.kernels.update(kernels)
            if not self.order:
                self.error = "the submission builds none of the puzzles to grade"
        elif kind == "start":
            self.current = message[1]
        elif kind == "row":
            row = message[1]
            self.rows[int(row["puzzle"])] = row
            self.current = None
        elif kind == "failed":
            self.error = message[1]
        elif kind == "memory":
            self.peak_bytes = max(self.peak_bytes, message[1])
        if kind == "done" or kind == "failed":
            self._finish()
            return
        self._next_deadline()

    def check_time(self, now: float) -> None:
        """Kill the worker if its current step ran past the wall-time limit, or the submission
        past its budget (then every puzzle without a row is a timeout)."""
        if self.done or self.waiting or now <= self.deadline:
            return
        self._kill()
        if now >= self.budget_end:
            self._out_of_budget()
            return
        limit = f"{self.limits.seconds:g} s"
        if self.current is None:
            self.error = f"reading the submission took longer than the limit ({limit})"
            self._finish()
            return
        self.rows[self.current] = limit_row(
            self.current, "timeout", f"grading stopped after the time limit of {limit}")
        self._continue()

    def _out_of_budget(self) -> None:
        budget = (f"the submission's time budget of {self.limits.submission_seconds:g} s "
                  "(the assignment's submission_time_limit)")
        if self.order is None:
            self.error = f"reading the submission took longer than {budget}"
        for number in self.order or []:
            if number not in self.rows:
                self.rows[number] = limit_row(number, "timeout",
                                              f"grading stopped: {budget} ran out")
        self._finish()

    def stop(self) -> None:
        """Stop the worker (the batch was interrupted); no outcome is recorded."""
        if not self.done:
            self._finish()

    def _died(self) -> None:
        self._kill()
        code = self.process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        if self.current is None:
            if not self.error:
                self.error = (f"the worker died while reading the submission ({how}; its "
                              f"memory cap is {self.limits.memory_bytes >> 20} MiB)")
            self._finish()
            return
        self.rows[self.current] = limit_row(
            self.current, "crashed",
            f"the worker process died ({how}) while grading this puzzle; its memory cap is "
            f"{self.limits.memory_bytes >> 20} MiB")
        self._continue()

    def _continue(self) -> None:
        """Wait for another turn if puzzles are left without a row; else done."""
        self.connection.close()
        if any(n not in self.rows for n in self.order or []):
            self.waiting = True
        else:
            self._finish()

    def _kill(self) -> None:
        """Stop the worker (if it still runs) and add its time to what the budget used."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        if self.holding:
            self.holding = False
            self.held += time.monotonic() - self.held_since

    def _finish(self) -> None:
        self._kill()
        self.connection.close()
        self.done = True

    def outcome(self) -> Outcome:
        rows = [self.rows[n] for n in self.order or [] if n in self.rows]
        return Outcome(self.submission, rows, self.kernels, self.error, self.held)


def work(sender: multiprocessing.connection.Connection, files: tuple[Path, ...],
         assigned: list[int] | None, seed: int, student: str, memory_bytes: int,
         skip: frozenset[int]) -> None:
    """The worker: cap memory, read the submission statically, grade puzzle after puzzle
    (each on hidden cases drawn for `student` from the secret `seed`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _cap_memory(memory_bytes)
    try:
        notebooks = []
        for path in files:
            try:
                notebooks += [parse_notebook(f) for f in read_notebooks(path)]
            except IntakeError as exc:
                raise GradeError(f"{exc}; not graded") from None
        if not notebooks:
            raise GradeError("no notebook (.ipynb) in the submission")
        reading = read_submission(notebooks)
        numbers = plan(reading, assigned)
        worked_on = set(reading.found) | {row["puzzle"] for row in reading.broken}
        if assigned and not worked_on & set(assigned):
            raise GradeError(f"no cell of the submission builds an assigned puzzle "
                             f"({', '.join(map(str, assigned))}): a wrong or empty notebook?")
        kernels = {number: found.kernel.source for number, found in reading.found.items()
                   if found.kernel is not None}
        sender.send(("read", numbers, kernels))
        for number in numbers:
            if number in skip:
                continue
            sender.send(("start", number))
            try:
                row = grade_puzzle(reading, number, seed, student)
            except MemoryError:
                row = limit_row(number, "memory-limit",
                                f"grading needed more than the memory cap of "
                                f"{memory_bytes >> 20} MiB")
            except Exception as exc:  # a bug of the grader must not lose the other puzzles
                row = limit_row(number, "crashed", f"the grader failed: {type(exc).__name__}: "
                                                   f"{str(exc)[:300]}")
            sender.send(("row", row))
        _last(sender, ("done",))
    except GradeError as exc:
        _last(sender, ("failed", str(exc)))
    except MemoryError:
        _last(sender, ("failed", f"reading the submission needed more than the memory cap of "
                               f"{memory_bytes >> 20} MiB"))
    except Exception as exc:  # e.g. a library that cannot load under too small a memory cap
        _last(sender, ("failed", f"the grader failed while reading the submission (memory cap "
                               f"{memory_bytes >> 20} MiB): {type(exc).__name__}: "
                               f"{str(exc)[:300]}"))
    finally:
        sender.close()


def _last(sender: multiprocessing.connection.Connection, message: tuple) -> None:
    """Send the worker's last message, after its peak memory (which the parent adds up)."""
    sender.send(("memory", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * RU_MAXRSS_UNIT))
    sender.send(message)


RU_MAXRSS_UNIT = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux


def _cap_memory(memory_bytes: int) -> None:
    """Cap this process's address space (Linux enforces it; macOS may refuse to lower it, and
    then the data segment is capped instead), and write no core files."""
    for limit in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
        try:
            resource.setrlimit(limit, (memory_bytes, memory_bytes))
            break
        except (ValueError, OSError):
            continue
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

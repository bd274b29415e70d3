"""Run one part's checks (public and hidden) against one student's code.

The suites are ordinary pytest files whose tests take a ``student`` argument
(the student's code in its own process) and, for hidden suites, a
``reference`` argument (the solution notebook's code, run here on the suites'
own inputs). pytest runs in the grader's process; every verdict, score and
message is made here, from plain data, never from anything the student's
process printed. The other parts' functions the student's code calls are
answered by :class:`StandIns`: the reference solution in a sandboxed process of
the grader's, fed plain data, so its source never meets the student's code.
"""

import contextlib
import dataclasses
import io
import os
import sys
import time
import types

import pytest

from autograder.course import corpus
from autograder.course.config import Assignment, Course, Part
from autograder.grade import reference_answers, reuse
from autograder.grade.versions import file_hash
from autograder.records.results import Check, PartResult
from selfcheck import child, wire
from selfcheck.checks import CheckFailed, label
from selfcheck.launch import Jail
from selfcheck.notes import load_failure
from selfcheck.program import Program, program, read_notebook
from selfcheck.student import InfrastructureError, Student, StudentError

_REFERENCES: dict[tuple[str, str], types.SimpleNamespace] = {}
STAND_INS_STARTUP = 60      # seconds for the reference stand-ins to load (never the student's time)


def reference_namespace(course: Course, assignment: Assignment) -> types.SimpleNamespace:
    """The solution notebook's definitions, run once per process (trusted code); its functions
    answer a call they have answered before from memory (autograder/grade/reference_answers.py)."""
    key = (course.root, assignment.id)
    if key not in _REFERENCES:
        nb = read_notebook(course.source(assignment, assignment.notebook))
        ns = {"__name__": "reference"}
        folder = course.source(assignment)
        sys.path.insert(0, folder)
        try:
            for cell, code in program(nb).cells:
                exec(compile(code, f"<reference {cell}>", "exec"), ns)
        finally:
            sys.path.remove(folder)
        _REFERENCES[key] = types.SimpleNamespace(**{
            k: reference_answers.remembered(v) if isinstance(v, types.FunctionType) else v
            for k, v in ns.items() if not k.startswith("__")},
            _notebook=course.source(assignment, assignment.notebook))    # what its answers depend on
    return _REFERENCES[key]


# pytest as a part needs it, started once per part: no plugins found by scanning the installed
# packages, no assertion rewriting (the suites raise CheckFailed and use no bare assert), and none
# of the plugins that run a full garbage collection of the grader's large heap after every session
PYTEST_LEAN = ["--disable-plugin-autoload", "--assert=plain"] + [
    arg for plugin in ("cacheprovider", "unraisableexception", "threadexception", "faulthandler", "logging",
                       "junitxml", "pastebin", "doctest", "legacypath", "tmpdir", "monkeypatch", "recwarn",
                       "setuponly", "setupplan", "stepwise")
    for arg in ("-p", f"no:{plugin}")]


class StandIns:
    """Starts the process that answers the student's calls to other parts' functions: the
    reference solution, in a sandbox of its own, fed plain data over a pair of pipes."""

    def __init__(self, course: Course, assignment: Assignment, workdir: str, jail: Jail):
        self._workdir, self._jail = workdir, jail
        self._limits = dataclasses.replace(course.limits, time_per_test=STAND_INS_STARTUP)
        self._program = program(read_notebook(course.source(assignment, assignment.notebook)))

    def start(self, fds: tuple[int, ...], names: list[str]) -> Student:
        process = Student(self._program, serve=(fds, names), workdir=self._workdir, limits=self._limits,
                          jail=self._jail, label="the grader's stand-ins", max_timeouts=None)
        try:
            process.start_now()
        except StudentError as exc:      # the reference itself failed to load: ours to fix
            process.close()
            raise InfrastructureError(f"the reference stand-ins did not load: {exc.message}") from None
        return process


class _Collector:
    """pytest plugin: supplies the fixtures and records each check's outcome."""

    def __init__(self, student, reference, hidden_path):
        self._student = student
        self._reference = reference
        self._hidden = os.path.abspath(hidden_path)
        self.checks = []
        self.infrastructure = None       # the grader's own failure: no check of this part counts
        self.cut_short = False           # a check ended by the process's death or its clock: the
                                         # machine had a say (its memory, its load), so never reused

    @pytest.fixture(scope="session")
    def student(self):
        return self._student

    @pytest.fixture(scope="session")
    def reference(self):
        return self._reference

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and report.failed):
            self.checks.append(self._record(item, call, report))

    def _record(self, item, call, report):
        params = item.callspec.params if hasattr(item, "callspec") else None
        doc = label(getattr(item.function, "__doc__", None) or item.name, params)
        check = Check(item.name, doc, "hidden" if str(item.path) == self._hidden else "public",
                      getattr(item.function, "weight", 1), "passed")
        if report.passed:
            return check
        exc = call.excinfo.value if call.excinfo else None
        if isinstance(exc, InfrastructureError):
            self.infrastructure = self.infrastructure or exc
            check.status, check.message = "error", f"{doc}: {exc}"
        elif isinstance(exc, StudentError):
            check.status = {"missing": "missing", "timeout": "timeout"}.get(exc.kind, "error")
            self.cut_short |= exc.kind in ("crashed", "timeout")
            check.message = f"{doc}: {exc.message}"
            check.mistake, check.diagnosis = exc.mistake, exc.diagnosis
        elif isinstance(exc, CheckFailed):
            check.status = "failed"
            check.message, check.mistake, check.diagnosis = exc.finding, exc.mistake, exc.diagnosis
        elif exc is not None:
            check.status = "failed"
            check.message = (f"{doc}: the answer could not be checked "
                             f"({type(exc).__name__}: {str(exc)[:300]})")
        else:
            check.status = "error"
            check.message = f"{doc}: the check did not run"
        check.message = wire.clean_text(check.message, 2000)
        if check.diagnosis:
            check.diagnosis = wire.clean_text(check.diagnosis, 1000)
        return check


def _status(checks, score, points):
    if not checks:
        return "error"
    if all(c.passed for c in checks):
        return "passed"
    if score > 0:
        return "partial"
    kinds = {c.status for c in checks if not c.passed}
    if len(kinds) == 1 and kinds & {"timeout", "missing", "error"}:
        return kinds.pop()
    return "failed"


def _reason(part, load_errors):
    """The part's first message: a cell that did not load, else the likely mistake, else the first failure.

    A first failure no likely mistake explains (an error the code raised, say) is quoted whole: a
    diagnosis drawn from other checks must not hide it."""
    checks = part.checks
    failing = [c for c in checks if not c.passed]
    unloaded = "; ".join(load_failure(e) for e in load_errors)
    if not failing:
        return (unloaded + "; " if unloaded else "") + f"all {len(checks)} checks passed"
    count = f"{len(failing)} of {len(checks)} checks did not pass"
    _, diagnosis = part.diagnosis
    if unloaded:
        return f"{unloaded}. {count}; first: {failing[0].said}"
    timeouts = [c for c in failing if c.status == "timeout"]
    if timeouts:                # the call that took too long, not a check it left unrun
        timed_out = next((c for c in timeouts if "not run:" not in c.message), timeouts[0])
        return f"Timed out: {timed_out.said}. {count}"
    stopped = next((c for c in failing if child.STOPPED in c.message), None)
    if stopped:                 # every later call of another part's function failed with it: no guess
        return f"{count}; first: {stopped.said}"
    if diagnosis:               # what came back, unless a likely mistake already explains it
        first = failing[0].doc if failing[0].diagnosis else failing[0].said
        return f"Likely mistake: {diagnosis}. {count}; first: {first}"
    return f"{count}; first: {failing[0].said}"


def forget(paths: list[str], root: str | None = None) -> None:
    """Drop the suites' modules so the next student starts from the same seeds.

    A grading worker grades many students; a suite module kept in memory would
    carry its random generators (and any module-level cache) from one student
    to the next, making a student's inputs depend on who was graded before.
    With ``root`` (the course folder), the same suite of another course folder
    goes too: pytest's importlib mode names a module by its path under the
    rootdir and reuses one already imported under that name, so a copy left by
    an earlier course in the same process would be run in place of this one.
    """
    files = {os.path.abspath(p) for p in paths}
    tails = tuple(os.sep + os.path.relpath(p, root) for p in files) if root else ()
    for name, module in list(sys.modules.items()):
        file = os.path.abspath(getattr(module, "__file__", None) or "")
        if file in files or (tails and file.endswith(tails)):
            del sys.modules[name]


def run_part(course: Course, assignment: Assignment, part: Part, prog: Program, workdir: str, *,
             jail: Jail | None = None, public_only: bool = False) -> PartResult:
    """Grade one part: returns its result record (score, status, reason, checks).

    Raises InfrastructureError when the sandbox failed: then nothing about the
    student can be concluded, and the caller grades the submission again later. A program this
    process graded before takes that result (autograder/grade/reuse.py). A part the wall clock
    cut short while its code had CPU time left (it could not get a CPU: the machine was busy) is
    graded once more, so that another job's load is not the student's score.
    """
    started = time.monotonic()
    if corpus.needs_corpus(course, assignment):
        # the hidden checks train the reference here, and framework.load_corpus reads only what
        # it is given: the course's private verified copy, as every sandbox gets it
        os.environ["TINYSHAKESPEARE"] = corpus.private(course) or ""
    if jail is None:            # the sandbox (autograder/sandbox/)
        from autograder import sandbox
        jail = sandbox.jail(course)
    found = reuse.key(course, assignment, part, prog, jail, public_only)

    def graded() -> tuple[PartResult, bool]:
        result, reusable, starved = _run(course, assignment, part, prog, workdir, jail, public_only, started)
        if starved:
            result, reusable, _ = _run(course, assignment, part, prog, workdir, jail, public_only, time.monotonic())
        return result, reusable
    return reuse.graded(found, graded)


def _run(course: Course, assignment: Assignment, part: Part, prog: Program, workdir: str, jail: Jail,
         public_only: bool, started: float) -> tuple[PartResult, bool, bool]:
    """The part graded for real, whether its result may be reused (autograder/grade/reuse.py), and
    whether the wall clock cut it short while its code had CPU time left."""
    reference = reference_namespace(course, assignment)
    student = Student(prog, workdir=workdir, limits=course.limits, budget=True, jail=jail,
                      label=f"your notebook ({part.id})",
                      stand_ins=StandIns(course, assignment, workdir, jail))
    hidden = os.path.join(course.root, part.hidden)
    collector = _Collector(student, reference, hidden)
    suites = [os.path.join(course.root, part.public)] + ([] if public_only else [hidden])
    args = suites + ["-q", "--noconftest", "--import-mode=importlib", "-o", "addopts=", "-W", "ignore",
                     "--rootdir", course.root] + PYTEST_LEAN
    forget(suites, course.root)
    said = io.StringIO()
    # options set for the grader's own pytest runs (a TA's --junitxml, say) are not the suites'
    addopts = os.environ.pop("PYTEST_ADDOPTS", None)
    try:
        student.start_early()         # its Python and numpy load while pytest starts and collects
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            code = pytest.main(args, plugins=[collector])
    finally:
        if addopts is not None:
            os.environ["PYTEST_ADDOPTS"] = addopts
        student.close()
        forget(suites)
    if collector.infrastructure is not None:
        raise collector.infrastructure
    if not collector.checks:        # the suites did not run: nothing is the student's, nothing kept
        lines = said.getvalue().splitlines()
        why = next((line[1:].strip() for line in reversed(lines) if line.startswith("E ")), lines[-1] if lines else "")
        raise InfrastructureError(f"the part's suites ran no check (pytest's exit code {int(code)}): {why[:500]}")
    checks = collector.checks
    total = sum(c.weight for c in checks) or 1
    earned = sum(c.weight for c in checks if c.passed)
    score = round(part.points * earned / total, 3)
    result = PartResult(part.id, score, part.points, _status(checks, score, part.points), "", checks,
                        suite=file_hash(os.path.join(course.root, part.public), hidden),
                        seconds=round(time.monotonic() - started, 2))
    result.reason = _reason(result, student.load_errors)
    return result, not collector.cut_short, student.starved

"""The self-check as a pytest plugin: ``pytest`` in a released assignment folder.

The public tests there call ``student.<function>(...)``; this plugin supplies
``student``, the notebook's code in a fresh process (the grader's own runner,
minus the hidden suites), turns a failed check into its one-paragraph message,
and ends by saying what is left for grading. It differs from grading in one
way: here every part runs *your* functions, so a check can fail because a
function from another part is wrong; a failure whose calls reached one says so
(what each check called is recorded). At grading each part runs with the
reference version of the other parts.

It refuses a notebook that is not the runner's own work (a hand-in in a course's grading
folder, another account's file: :mod:`selfcheck.whose`), whose code would run unconfined as them.

The first check, ``<notebook>::every cell loads``, fails when a solution cell
raised while loading (a SyntaxError, say), naming the cell and the line.

The notebook's process starts as pytest configures, before anything here imports numpy
(:mod:`selfcheck.checks` is imported where a check's outcome is read): its Python and numpy
load while pytest loads numpy and collects the checks.
"""

import os
import pathlib
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from selfcheck import manifest, notes, whose
from selfcheck.program import NotebookError, program, read_notebook
from selfcheck.student import InfrastructureError, Student, StudentError

FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the assignment folder


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--notebook", default=None,
                     help="check this notebook instead of the one in the assignment folder")


class _Session:
    """The notebook under check, its process and what the checks found so far."""

    def __init__(self, config: pytest.Config):
        self.info = manifest.read(FOLDER)
        self.path = config.getoption("notebook") or os.path.join(FOLDER, self.info["notebook"])
        refused = whose.refusal(self.path)     # a hand-in would run unconfined, as whoever runs pytest
        if refused:
            pytest.exit(refused, returncode=2)
        try:
            nb = read_notebook(self.path)
        except NotebookError as exc:
            pytest.exit(f"{self.path}: {exc}", returncode=2)
        self.program = program(nb)
        self.code = {cell[0]: cell[1] for cell in self.program.cells if len(cell) == 2}
        self.uses = notes.Uses(nb, self.info["parts"])
        self.failing: dict[str, set[str]] = {}     # part -> the functions its failing public checks call
        self.unwritten = notes.unwritten(self.code)   # function -> its cell, still raising NotImplementedError
        self.set_aside: list[pytest.TestReport] = []  # failures of checks that call only those functions
        self.unloaded: list[str] = []
        self.student: Student | None = None

    def handle(self) -> Student:
        if self.student is None:
            self.student = Student(self.program, workdir=FOLDER, limits=manifest.limits(self.info),
                                   label=os.path.basename(self.path))
        return self.student

    def load_failures(self) -> list[str]:
        student = self.handle()
        try:
            student.start_now()             # loading is lazy: load now, to report it first
        except StudentError as exc:
            self.unloaded = [exc.message]
        else:
            self.unloaded = [notes.load_failure(e, self.code.get(e["cell"])) for e in student.load_errors]
        return self.unloaded


SESSION = pytest.StashKey[_Session]()     # the session's _Session, on pytest's Config


def pytest_configure(config: pytest.Config) -> None:
    """Read the notebook and start its process: the cells load at the first check."""
    session = config.stash[SESSION] = _Session(config)
    config.pluginmanager.register(_NotWrittenYet(), "selfcheck-not-written-yet")
    if not (config.option.collectonly or config.option.help):
        try:
            session.handle().start_early()
        except InfrastructureError:
            pass                # it is started again at the first check, which reports why it failed


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None and session.student is not None:
        session.student.close()


@pytest.fixture(scope="session")
def student(request: pytest.FixtureRequest) -> Student:
    return request.config.stash[SESSION].handle()


class _Loads(pytest.Item):
    """Every solution cell of the notebook loads."""

    def runtest(self) -> None:
        from selfcheck.checks import CheckFailed
        failures = self.config.stash[SESSION].load_failures()
        if failures:
            raise CheckFailed("\n".join(failures))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, "every cell loads"


class _NotebookFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        yield _Loads.from_parent(self, name="every cell loads")


def pytest_collect_file(file_path: pathlib.Path, parent: pytest.Collector) -> pytest.File | None:
    if file_path.name == parent.config.stash[SESSION].info["notebook"]:
        return _NotebookFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The loading check first, then the parts in the notebook's order (a part's helpers first)."""
    info = config.stash[SESSION].info
    order = {p["id"]: i for i, p in enumerate(info["parts"])}
    items.sort(key=lambda item: -1 if isinstance(item, _Loads)
               else order.get(manifest.part_of(info, item.path.name), len(order)))
    if not any(isinstance(item, _Loads) for item in items):    # --notebook from elsewhere
        module = next((item.parent for item in items if item.parent is not None), None)
        if module is not None:
            items.insert(0, _Loads.from_parent(module, name="every cell loads"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Each check starts with no calls recorded: its note names only what it called."""
    student = item.config.stash[SESSION].student
    if student is not None:
        student.called.clear()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or call.excinfo is None:
        return
    from selfcheck.checks import CheckFailed
    session = item.config.stash[SESSION]
    part = manifest.part_of(session.info, item.path.name)
    if part:
        session.failing.setdefault(part, set()).update(notes.checked_names(getattr(item, "function", None)))
    if call.excinfo.errisinstance((CheckFailed, StudentError)):
        exc = call.excinfo.value
        reached = session.uses.of(part, session.student.called if session.student else ())
        lean = notes.leaning_on(reached, {p: f for p, f in session.failing.items() if p != part})
        message = notes.finding(exc) if lean else str(exc)     # a broken helper explains it, not a guess
        if session.unloaded and ("defines no function" in message or "NameError" in message):
            message += " (a cell did not load: see the first check, `every cell loads`)"
        report.longrepr = f"{lean}\n{message}" if lean else message
        called = notes.checked_names(getattr(item, "function", None))
        if isinstance(call.excinfo.value, StudentError) and called and called <= session.unwritten.keys():
            report.user_properties.append(("unwritten", sorted(called)))


class _NotWrittenYet:
    """The failures of checks that only call functions not written yet are one paragraph, not one
    section each: set aside while pytest writes its failures, then put back, for its short summary
    and its counts."""

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        state = session.config.stash.get(SESSION, None)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if state is not None and reporter is not None:
            failed = reporter.stats.get("failed", [])
            aside = [r for r in failed if any(k == "unwritten" for k, _ in getattr(r, "user_properties", ()))]
            if len(aside) > 1:
                state.set_aside = aside
                reporter.stats["failed"] = [r for r in failed if r not in aside]
        return (yield)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
        state = config.stash[SESSION]
        if not state.set_aside:
            return
        terminalreporter.stats.setdefault("failed", []).extend(state.set_aside)
        order = list(state.unwritten)
        called: set[str] = set()
        for report in state.set_aside:
            for key, names in report.user_properties:
                if key == "unwritten" and isinstance(names, list):
                    called.update(names)
        functions = sorted(called, key=order.index)
        terminalreporter.write_sep("_", "not written yet")
        terminalreporter.write_line(notes.not_written(functions, state.unwritten, state.code, len(state.set_aside)))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> Generator[None, None, None]:
    """The closing line, after pytest's own summary (its FAILED lines): the outermost wrapper's
    code after the yield runs last."""
    yield
    info = config.stash[SESSION].info
    stats = terminalreporter.stats
    passed, failed = len(stats.get("passed", [])), len(stats.get("failed", []) + stats.get("error", []))
    hidden = ", ".join(f"{p['id']} {p['hidden_checks']}" for p in info["parts"])
    total = sum(p["hidden_checks"] for p in info["parts"])
    terminalreporter.write_line("")
    student = config.stash[SESSION].student
    for line in notes.slow(student.slow_calls if student else {}, manifest.limits(info).time_per_test):
        terminalreporter.write_line("Note: " + line)
    terminalreporter.write_line("Self-check: " + notes.closing(passed, failed, f"{total} ({hidden})"))

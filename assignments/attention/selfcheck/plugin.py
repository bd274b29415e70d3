"""The self-check as a pytest plugin: ``pytest`` in a released assignment folder.

The public tests there call ``student.<function>(...)``; this plugin supplies
``student``, the notebook's code in a fresh process (the grader's own runner,
minus the hidden suites), turns a failed check into its one-paragraph message,
and ends by saying how many hidden checks run at grading.
"""

import json
import os

import pytest

from selfcheck.checks import CheckFailed
from selfcheck.program import NotebookError, program, read_notebook
from selfcheck.student import Student, StudentError


FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the assignment folder


def manifest(folder=FOLDER):
    """The release's description of itself: notebook, parts, limits, hidden counts."""
    path = os.path.join(folder, "selfcheck", "manifest.json")
    with open(path) as fh:
        return json.load(fh)


def pytest_addoption(parser):
    parser.addoption("--notebook", default=None,
                     help="check this notebook instead of the one in the assignment folder")


@pytest.fixture(scope="session")
def student(request):
    folder = FOLDER
    info = manifest(folder)
    path = request.config.getoption("notebook") or os.path.join(folder, info["notebook"])
    try:
        prog = program(read_notebook(path))
    except NotebookError as exc:
        pytest.exit(f"{path}: {exc}", returncode=2)
    with Student(prog, workdir=folder, time_limit=info["time_per_test"],
                 memory_mb=info["memory_mb"], label=os.path.basename(path)) as handle:
        yield handle


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance((CheckFailed, StudentError)):
        exc = call.excinfo.value
        report.longrepr = getattr(exc, "message", None) or str(exc)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    info = manifest()
    stats = terminalreporter.stats
    passed, failed = len(stats.get("passed", [])), len(stats.get("failed", []) + stats.get("error", []))
    hidden = ", ".join(f"{p['id']} {p['hidden_checks']}" for p in info["parts"])
    total = sum(p["hidden_checks"] for p in info["parts"])
    terminalreporter.write_line("")
    terminalreporter.write_line(
        f"Self-check: {passed} public checks passed, {failed} failed. "
        f"At grading {total} hidden checks also run ({hidden}); "
        "a green self-check is not yet a full grade.")

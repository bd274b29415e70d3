"""Shared fixtures: the course, and one demo cohort graded once through the real nbgrader."""

import os
import re
import shutil

import pytest

from autograder.course import config
from autograder.grade import reference_answers, reuse


KEEP_DAYS = 14          # kept verdicts not read again for this long are removed

# `make test` runs the files on two processes (pytest-xdist, --dist loadfile, in this order): the
# longest first, as measured, so that neither process is left with one of them at the end.
LONGEST_FIRST = ("test_hub.py", "test_mutants.py", "test_hostile.py", "test_bench.py", "test_batch.py",
                 "test_browser.py", "test_cluster.py", "test_nbgrader_paths.py", "test_handin_paths.py",
                 "test_accounts.py", "test_tutorial.py", "test_types.py", "test_late.py", "test_pipeline.py", "test_selfcheck.py",
                 "test_folders.py", "test_part_independence.py")


@pytest.fixture(scope="module")
def graded_for_real():
    """For a file whose tests compare two gradings of one notebook (alone and beside hostile
    neighbours, on a cluster and locally): no result is taken from another test's grading."""
    saved = os.environ.pop(reuse.STORE, None)
    yield
    if saved is not None:
        os.environ[reuse.STORE] = saved


@pytest.fixture(scope="session")
def course():
    return config.load()


@pytest.fixture(scope="session")
def graded_demo(course, tmp_path_factory):
    """The demo cohort, graded by `course grade` once per run, whichever test process asks first
    (the others wait for it): (folder, records, students). Tests read it; one that changes it
    copies it first (test_batch's ``graded_copy``)."""
    import fcntl
    import json
    from autograder import pipeline
    from autograder.mistakes import cohort
    from autograder.records import store
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base     # pytest-xdist's workers
    folder = shared / "graded-demo"
    with open(f"{folder}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "graded-demo.json"       # beside the folder: tests walk what grading wrote
        if not done.exists():
            students = cohort.demo_cohort(course, str(folder / "submitted"))
            pipeline.grade(course, str(folder / "submitted"), str(folder), jobs=2)
            done.write_text(json.dumps(students))
    return folder, store.load_results(str(folder)), json.loads(done.read_text())


def _copy_course(course, dest):
    """Copy course.yaml, its nbgrader_config.py and everything they point to into ``dest``."""
    for name in ("course.yaml", "nbgrader_config.py", "solutions", "assignments", "data", "parts"):
        src = os.path.join(course.root, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, name), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
            shutil.copy(src, os.path.join(dest, name))


@pytest.fixture(scope="session")
def copy_course(course):
    """For fixtures wider than one test: ``copy_course(dest)`` copies the course there."""
    return lambda dest: _copy_course(course, dest)


@pytest.fixture
def course_copy(course, tmp_path):
    """A copy of the course in ``tmp_path/course`` (course.yaml, its nbgrader_config.py and
    everything they point to), free to change. The first call makes it; each call applies
    ``edit`` (a function changing course.yaml's data) and returns the course it describes."""
    import yaml
    dest = tmp_path / "course"

    def copy(edit=None):
        if not dest.exists():
            _copy_course(course, dest)
        if edit:
            with open(dest / "course.yaml") as fh:
                raw = yaml.safe_load(fh)
            edit(raw)
            with open(dest / "course.yaml", "w") as fh:
                yaml.safe_dump(raw, fh, sort_keys=False)
        return config.load(str(dest / "course.yaml"))
    return copy


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium, which `make test` installs when it runs as root (as it does bubblewrap)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("Chromium is not installed: `make test` installs it as root (apt-get install chromium)")
    return found


@pytest.fixture
def release_copy(course, tmp_path):
    """A student's copy of each released folder, to run the self-check in."""
    def make(assignment):
        dest = tmp_path / assignment.id
        shutil.copytree(course.release(assignment), dest,
                        ignore=shutil.ignore_patterns("__pycache__"))
        return dest
    return make


_ALL_SLOW = re.compile(r"^pytestmark = \[?pytest\.mark\.slow\b", re.M)


def pytest_ignore_collect(collection_path, config):
    """`make check` (``-m "not slow"``) does not import a file whose every test is slow: its imports
    (nbgrader's apps, Dask, Playwright) were half of that run."""
    if config.option.markexpr == "not slow" and collection_path.suffix == ".py" \
            and collection_path.name.startswith("test_"):
        return bool(_ALL_SLOW.search(collection_path.read_text(encoding="utf-8"))) or None
    return None


def pytest_configure(config):
    """Matplotlib draws off screen; every part graded by any test process, or a command one starts,
    is kept for the others and for later runs (autograder/grade/reuse.py): the demo cohort, the
    tutorial's and the exchange's terms and the mutation check hand in the same notebooks run after
    run. A kept verdict is keyed on the hash of the grader's code, the part's suites and reference,
    the program and the sandbox, so any change to those grades again; ``$COURSE_GRADE_CACHE`` names
    another folder (an empty one for a cold run). pytest-xdist's workers inherit it."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    if "PYTEST_XDIST_WORKER" not in os.environ and reuse.STORE not in os.environ:
        folder = os.path.join(os.path.dirname(reference_answers.cache_folder()), "test-grades")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        reuse.prune(folder, days=KEEP_DAYS)
        os.environ[reuse.STORE] = folder


def _needs_corpus(item):
    """Tests that train on the corpus: marked `corpus`, or grading the demo cohort (it holds a
    weighted-attention submission, whose hidden checks train)."""
    return item.get_closest_marker("corpus") is not None or "graded_demo" in item.fixturenames


def pytest_collection_modifyitems(config, items):
    """The longest files first; without the corpus, skip the tests that train and run the rest
    (one reason, said once)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    training = [item for item in items if _needs_corpus(item)]
    if not training:
        return
    from autograder.course import config as course_config, corpus
    try:
        corpus.find(course_config.load())
    except corpus.CorpusError as exc:
        skip = pytest.mark.skip(reason=f"needs the corpus: {exc}")
        for item in training:
            item.add_marker(skip)


def pytest_sessionfinish(session):
    """On a pytest-xdist worker, hand the summary lines to the process that prints them."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["course_summary"] = getattr(session.config, "_course_summary", [])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """(pytest-xdist, in the process that prints) a worker's summary lines."""
    lines = getattr(node, "workeroutput", {}).get("course_summary", [])
    node.config._course_summary = getattr(node.config, "_course_summary", []) + lines


def pytest_terminal_summary(terminalreporter, config):
    """The mutation check's counts (tests/test_mutants.py) and the isolation grading used."""
    lines = getattr(config, "_course_summary", [])
    if lines:
        from autograder import sandbox
        for line in lines + [sandbox.describe()]:
            terminalreporter.write_line(line)

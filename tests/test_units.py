"""Unit tests of the pieces with logic, on tiny in-memory notebooks and records (milliseconds each).

What a notebook runs (`program`), a part's status and reason, which submissions a batch grades
(`plan`, `stale`), and what the self-check kit ships; the slow tests check the same through real
nbgrader and graded cohorts.
"""

import dataclasses
import hashlib
import json
import os

import numpy as np
import pytest

from autograder.grade import discovery, grading, suites, versions
from autograder.records import store
from autograder.records.results import Check, PartResult, Submission
from autograder.nbgrader import selfcheck_kit
from selfcheck.program import program


def _cell(gid, code, *, solution=False, grade=False, locked=False, kind="code"):
    meta = {"grade_id": gid, "solution": solution, "grade": grade, "locked": locked} if gid else {}
    return {"cell_type": kind, "source": code, "metadata": {"nbgrader": meta} if gid else {}}


def _notebook(*cells):
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


RELEASE = _notebook(
    _cell("imports", "import math", locked=True),
    _cell("square", "def square(x):\n    raise NotImplementedError", solution=True),
    _cell("twice", "def twice(x):\n    raise NotImplementedError", solution=True),
    _cell("show_table", "print(square(3))", locked=True),
    _cell("check_square", "check('square')", grade=True, locked=True),
)


def _submission(*extra, imports="import math", square="def square(x):\n    return x * x"):
    return _notebook(_cell("imports", imports, locked=True), _cell("square", square, solution=True),
                     *extra, _cell("twice", "def twice(x):\n    return 2 * x", solution=True),
                     _cell("show_table", "print(square(3))", locked=True))


# --- program(): what runs in the student's process ---------------------------------------------------

def test_the_released_given_cells_win_and_show_and_check_cells_never_run():
    prog = program(_submission(imports="import os; os.remove('x')"), RELEASE)
    assert prog.cells == [("imports", "import math"), ("square", "def square(x):\n    return x * x"),
                          ("twice", "def twice(x):\n    return 2 * x")]
    assert prog.given == [("imports", "import math")] and prog.missing == []


def test_a_cell_the_student_added_keeps_only_its_definitions_and_its_place():
    added = _cell(None, "import numpy as np\nprint('hi')\nHELPER = 3\ndef helper():\n    return 1")
    prog = program(_submission(added), RELEASE)
    labels = [label for label, *_ in prog.cells]
    assert labels == ["imports", "square", "a cell you added", "twice"]
    assert prog.cells[2][1] == "import numpy as np\ndef helper():\n    return 1"


def test_grading_one_part_runs_its_cells_and_stand_ins_for_the_parts_it_uses():
    prog = program(_submission(), RELEASE, own={"twice"}, stand_ins={"square"})
    assert prog.cells == [("imports", "import math"), ("square (another part)", None, ["square"]),
                          ("twice", "def twice(x):\n    return 2 * x")]
    alone = program(_submission(), RELEASE, own={"twice"})
    assert [label for label, *_ in alone.cells] == ["imports", "twice"]


def test_a_deleted_solution_cell_is_missing():
    nb = _submission()
    nb["cells"] = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != "twice"]
    assert program(nb, RELEASE).missing == ["twice"]


def test_a_solution_cell_counts_only_in_its_released_type():
    """Correct code in a markdown or raw cell carrying the solution's grade id, before the untouched
    stub: the stub is graded, as formgrader shows it and the student's own pytest runs it; a code
    cell carrying a markdown answer's id is a cell the student added."""
    for kind in ("markdown", "raw"):
        moved = _cell("square", "def square(x):\n    return x * x", solution=True, kind=kind)
        nb = _submission(square="def square(x):\n    raise NotImplementedError")
        nb["cells"].insert(1, moved)
        prog = program(nb, RELEASE)
        assert ("square", "def square(x):\n    raise NotImplementedError") in prog.cells, kind
        assert program(nb).cells[1] == ("square", "def square(x):\n    raise NotImplementedError")
    release = _notebook(*RELEASE["cells"], _cell("answer", "Why?", solution=True, kind="markdown"))
    nb = _submission(_cell("answer", "def helper():\n    return 1\nprint('hi')", solution=True))
    assert ("a cell you added", "def helper():\n    return 1") in program(nb, release).cells


def test_without_a_release_the_notebook_runs_as_it_is():
    prog = program(_submission(imports="import os"))
    assert prog.cells[0] == ("imports", "import os") and prog.given == [("imports", "import os")]


# --- a part's status and reason -------------------------------------------------------------------------

def _check(status, doc="a check", message=""):
    return Check(name="t", doc=doc, visibility="public", weight=1, status=status,
                 message=message or f"{doc}: {status}")


def test_status_is_passed_partial_failed_or_the_one_kind_of_failure():
    assert suites._status([_check("passed")] * 2, 4, 4) == "passed"
    assert suites._status([_check("passed"), _check("failed")], 2, 4) == "partial"
    assert suites._status([_check("failed"), _check("timeout")], 0, 4) == "failed"
    assert suites._status([_check("timeout")] * 2, 0, 4) == "timeout"
    assert suites._status([_check("missing")], 0, 4) == "missing"
    assert suites._status([], 0, 4) == "error"


def test_the_reason_names_an_unloaded_cell_first_then_the_likely_mistake_then_the_first_failure():
    def reason(checks, unloaded=()):
        return suites._reason(PartResult("p", 0, 4, "partial", "", checks), list(unloaded))

    checks = [_check("passed"), _check("failed", "sums to one", "sums to one: got 2")]
    assert reason(checks) == "1 of 2 checks did not pass; first: sums to one: got 2"
    assert reason([_check("passed")]) == "all 1 checks passed"
    diagnosed = Check("t", "adds up", "public", 1, "failed", "adds up: got 3.", "wrong-sum", "the sum is wrong")
    assert reason(checks + [diagnosed]) == \
        "Likely mistake: the sum is wrong. 2 of 3 checks did not pass; first: sums to one: got 2"
    assert reason([diagnosed, checks[1]]).endswith("first: adds up")
    other = Check("u", "sums to two", "public", 1, "failed", "sums to two: got 3.", "other", "another slip")
    assert reason([other, diagnosed, diagnosed]).endswith("first: sums to two")
    unloaded = reason(checks + [diagnosed], [{"cell": "softmax", "error": "SyntaxError: invalid syntax"}])
    assert unloaded.startswith("the cell 'softmax' did not load") and unloaded.endswith("first: sums to one: got 2")


# --- plan and stale: which submissions a batch grades ------------------------------------------------

def _graded(course, tmp_path, student="ann"):
    """A submission of the first assignment and a current result of it, as a batch leaves them."""
    assignment = course.assignments[0]
    path = tmp_path / "submitted" / student / assignment.id / assignment.notebook
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_submission()))
    record = Submission(student=student, assignment=assignment.id, notebook=assignment.notebook, grader="g1",
                        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                        suites=versions.suite_versions(course, assignment.id))
    store.write_result(str(tmp_path / "out"), record)
    return discovery.Task(student, assignment.id, str(path)), record


def test_an_unchanged_submission_is_kept_and_every_change_is_named(course, tmp_path):
    task, record = _graded(course, tmp_path)
    path = task.path
    assert versions.stale(course, record, path, grader="g1") is None
    assert versions.stale(course, None, path, grader="g1") == "not graded yet"
    assert versions.stale(course, record, path, grader="g2") == "the grader changed"
    assert versions.stale(course, dataclasses.replace(record, suites={}), path, grader="g1").startswith("what decides")
    assert versions.stale(course, dataclasses.replace(record, problem="grader error: x"), path, grader="g1") == \
        "the grader failed on it last time"
    with open(path, "a") as fh:
        fh.write("\n")
    assert versions.stale(course, record, path, grader="g1") == "the notebook changed"


def test_plan_grades_what_is_stale_and_keeps_what_is_not(course, tmp_path):
    kept, record = _graded(course, tmp_path, "ann")
    new = discovery.Task("bob", kept.assignment, kept.path.replace("/ann/", "/bob/"))
    planned = grading.plan(course, [kept, new], str(tmp_path / "out"), grader="g1")
    assert planned.todo == [new] and planned.valid == [record] and planned.previous == {kept.key: record}
    forced = grading.plan(course, [kept, new], str(tmp_path / "out"), force=True, grader="g1")
    assert forced.todo == [kept, new]


def test_a_batch_grades_the_longest_submissions_first(course):
    """Training assignments first while nothing is known; then by each assignment's mean seconds."""
    tasks = [discovery.Task(s, a.id, f"/x/{s}/{a.id}") for s in ("ann", "bob") for a in course.assignments]
    first = grading.longest_first(course, tasks, {})
    assert {t.assignment for t in first[:2]} == {"weighted_attention"}
    took = {"attention": 9.0, "tiny_transformer": 1.0, "weighted_attention": 4.0}
    previous = {t.key: Submission(t.student, t.assignment, "nb.ipynb", seconds=took[t.assignment]) for t in tasks}
    assert [t.assignment for t in grading.longest_first(course, tasks, previous)][::2] == \
        ["attention", "weighted_attention", "tiny_transformer"]


# --- the self-check kit --------------------------------------------------------------------------------

def test_each_assignment_ships_the_selfcheck_modules_it_uses(course):
    kits = {a.id: selfcheck_kit.kit_modules(course, a) for a in course.assignments}
    runner = {"__init__.py", "plugin.py", "child.py", "student.py", "program.py", "wire.py", "checks.py"}
    assert all(runner <= set(kit) for kit in kits.values())
    assert "probes/projection_removal.py" in kits["weighted_attention"]
    assert "scale_experiment.py" in kits["attention"]
    assert not any(name == "probes/projection_removal.py" or name == "scale_experiment.py"
                   for name in kits["tiny_transformer"])


def test_the_selfcheck_kit_reads_imports_and_probes_from_code():
    code = ("from selfcheck import scale_experiment as scale\nfrom selfcheck.checks import that\n"
            "import selfcheck.chapter\n%matplotlib inline\nstudent.probe('common', 'call', 1)\n")
    assert selfcheck_kit._selfcheck_uses(code) == {"scale_experiment", "checks", "chapter", "probes.common"}


def test_the_release_tells_the_kit_the_limits_and_each_part_s_names(course):
    """The released manifest carries course.yaml's limits as one record and each part's check cell
    and public tests as the course names them, so the kit never rebuilds a name from an id."""
    from selfcheck import manifest
    for assignment in course.assignments:
        info = manifest.read(course.release(assignment))
        assert manifest.limits(info) == course.limits
        assert [(p["id"], p["check_cell"], p["tests"]) for p in info["parts"]] == \
            [(p.id, p.check_cell, p.public_file) for p in assignment.parts]
        assert [manifest.part_of(info, p.public_file) for p in assignment.parts] == [p.id for p in assignment.parts]


def test_pytest_in_a_released_folder_loads_its_plugin_without_numpy(course):
    """The self-check starts the notebook's process as pytest configures, before anything has
    imported numpy: the two processes load it side by side (a tenth of a second of every run)."""
    import subprocess
    import sys
    for assignment in course.assignments:
        run = subprocess.run([sys.executable, "-c", "import sys, selfcheck.plugin; print('numpy' in sys.modules)"],
                             cwd=course.release(assignment), capture_output=True, text=True)
        assert run.stdout.strip() == "False", (assignment.id, run.stdout, run.stderr[-2000:])


def test_every_jail_starts_a_process_the_same_way():
    """The grader's two sandboxes and the student's unconfined self-check answer one interface."""
    import inspect
    from autograder.sandbox.jails import BwrapJail, WeakJail
    from selfcheck.launch import Jail, Unconfined
    for jail in (BwrapJail, WeakJail, Unconfined):
        assert inspect.signature(jail.launch) == inspect.signature(Jail.launch), jail
        assert isinstance(jail.isolated, bool), jail


def test_pictures_and_the_students_pytest_plugin_are_not_part_of_the_grader_version(monkeypatch):
    real = versions.file_hash
    hashed = []
    monkeypatch.setattr(versions, "file_hash", lambda *paths: hashed.extend(paths) or real(*paths))
    versions.grader_version()
    names = {os.path.basename(p) for p in hashed}
    assert "plots.py" not in names and "plugin.py" not in names
    assert {"program.py", "student.py", "checks.py", "handin.py", "grading.py", "submission.py", "suites.py", "jails.py"} <= names


def test_a_cell_too_deep_or_too_large_to_parse_is_a_cell_that_does_not_load():
    """The grader parses every cell a student added: nesting past the parser's depth, or
    megabytes of padding, is the student's cell not loading, never the grader's error."""
    from selfcheck.program import definitions_only, defined_names
    for code in ("x = a" + ".b" * 200000, "def f():\n    pass\n" + "a = 1\n" * 50000):
        assert definitions_only(code) == "" and defined_names(code) == []


def test_an_added_cell_of_thousands_of_definitions_costs_the_grader_linear_time():
    """One added cell of 2,000 two-line functions (70 KB, under the parsing bound): keeping its
    definitions costs a small multiple of parsing it once, not a re-split of the cell per function
    (which took minutes, in the grader, before any sandbox started)."""
    import ast
    import signal
    import time
    from selfcheck.program import definitions_only
    body = [f"def f{i}(x):\n    return x + 'é'" for i in range(2000)]
    code = "".join(f"{definition}  # a comment\n" for definition in body)
    started = time.monotonic()
    ast.parse(code)
    bound = max(5.0, 10 * (time.monotonic() - started))

    def too_slow(*_):
        raise AssertionError(f"definitions_only took more than {bound:.1f} s")
    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.setitimer(signal.ITIMER_REAL, bound)
    try:
        kept = definitions_only(code)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert kept == "\n".join(body)


def test_a_notebook_of_too_many_cells_or_too_much_code_is_refused_before_it_is_built():
    """What the grader parses and builds before any sandbox is bounded: more cells or more code
    than a hand-in can need is the student's error, named, found in one pass."""
    import json
    import time
    from selfcheck.program import MAX_CELLS, MAX_CODE_CHARS, NotebookError, parse_notebook
    cell = {"cell_type": "code", "metadata": {}, "source": "def f(x): return x", "outputs": [],
            "execution_count": None}
    many = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell] * (MAX_CELLS + 1)}
    big = dict(many, cells=[dict(cell, source="x = 1\n" * (MAX_CODE_CHARS // 12 + 1))] * 2)
    for nb, said in ((many, f"{MAX_CELLS + 1:,} cells"), (big, f"more than {MAX_CODE_CHARS:,} characters")):
        started = time.monotonic()
        with pytest.raises(NotebookError, match=said):
            parse_notebook(json.dumps(nb).encode())
        assert time.monotonic() - started < 5


def test_an_added_cell_that_parses_but_nests_deeply_keeps_its_own_text():
    """An added function whose expression is a thousand levels deep parses, but writing its tree
    back out would recurse past Python's limit in the grader (a grader error on every run): the
    definitions are kept as the student wrote them, decorators included, and the rest dropped."""
    from selfcheck.program import definitions_only
    deep = "def f(a):\n    return " + "+".join(["a"] * 1500) + "\n"
    code = "import math; x = 3\n@functools.cache\n" + deep + "print(x)\n"
    kept = definitions_only(code)
    assert kept == "import math\n@functools.cache\n" + deep.rstrip("\n")


def test_a_diagnosis_comes_from_the_check_never_from_words_in_an_error():
    """A student's exception can say "Likely mistake: ..."; only a check, or a cause the student's process
    named on the exception itself (selfcheck/causes.py), gives a check its diagnosis and mistake id."""
    from selfcheck.checks import CheckFailed
    from selfcheck.student import StudentError
    forged = StudentError("error", "ValueError: Likely mistake: the wrong axis. could not be broadcast together")
    assert (forged.diagnosis, forged.mistake, forged.cause) == (None, None, None)
    assert str(forged) == forged.message
    numpy = StudentError("error", "ValueError: operands could not be broadcast together", "broadcast")
    assert numpy.mistake == "shapes-need-keepdims" and str(numpy).endswith(f"Likely mistake: {numpy.diagnosis}.")
    assert StudentError("error", "x", "made-up").diagnosis is None
    failed = CheckFailed("softmax(z): expected 1, got nan.", "exp overflows", "softmax-no-max-shift")
    assert str(failed) == "softmax(z): expected 1, got nan. Likely mistake: exp overflows."
    assert (failed.finding, failed.mistake) == ("softmax(z): expected 1, got nan.", "softmax-no-max-shift")


def test_every_check_of_a_suite_has_its_own_label(course):
    """A parametrised check's cases read as checks of their own (the feedback page, Gradescope, the check cell)."""
    import selfcheck
    from selfcheck.checks import label
    for assignment in course.assignments:
        for part in assignment.parts:
            for path in (part.public, part.hidden):
                tests = selfcheck._public_tests(os.path.join(course.root, path))
                labels = [label(getattr(fn, "func", fn).__doc__, getattr(fn, "keywords", None)) for _, fn in tests]
                twice = sorted({text for text in labels if labels.count(text) > 1})
                assert not twice, f"{path}: one label for several checks: {twice}"


def test_a_long_array_is_shown_from_where_it_differs():
    """Identical first entries say nothing: both arrays are shown from the first entry that differs."""
    from selfcheck.checks import CheckFailed, close
    expected = np.arange(40.0).reshape(1, 5, 8)
    got = expected.copy()
    got[0, 2, 3] += 1.0
    with pytest.raises(CheckFailed) as failed:
        close(got, expected, "the layer")
    assert "reading [19.0000, 20.0000" in str(failed.value) and "from index [0, 2, 3]" in str(failed.value)
    assert "reading [20.0000, 20.0000" in str(failed.value)


def test_a_matrix_product_that_fails_is_named_after_the_function_it_failed_in():
    """x @ W.T in project_qkv or V @ alpha in attend is no heads problem: the words name the function's
    own products."""
    from selfcheck import causes

    def project_qkv(x, W_q):
        return x @ W_q.T

    def attend(alpha, V):
        return V @ alpha

    for fn, args, name in ((project_qkv, (np.ones((5, 6)), np.ones((6, 3))), "project_qkv"),
                           (attend, (np.ones(5), np.ones((5, 2))), "attend")):
        with pytest.raises(ValueError) as raised:
            fn(*args)
        mistake, words = causes.diagnosis(causes.of(raised.value))
        assert mistake == "matmul-shapes" and f"in {name} do not line up" in words and "heads" not in words


def test_numpy_s_shape_errors_are_named_in_the_check_cell_too():
    """The check cell runs the notebook's functions in the kernel: a matmul whose shapes do not line up
    gets the same diagnosis there as in `pytest` and at grading, from the exception itself."""
    from selfcheck.errors import StudentError
    from selfcheck.local_student import LocalStudent

    def combine(heads, W_o):
        return np.mean(heads, axis=0) @ W_o

    with pytest.raises(StudentError) as raised:
        LocalStudent({"combine": combine}).call("combine", np.ones((3, 5, 2)), np.ones((6, 6)))
    assert raised.value.mistake == "matmul-shapes" and "Likely mistake: the shapes of a matrix product" in str(raised.value)


def test_the_stand_ins_start_before_the_students_code_can_run():
    """Code that forks until its account may start no more processes (grading as an ordinary user
    has no cgroup to stop it) must not keep the grader's stand-ins from starting: they start with
    the pipes, before the student's process exists, on the ends it does not inherit."""
    from selfcheck.stand_in_link import StandInLink

    class Factory:
        def start(self, fds, names):
            self.fds, self.names = fds, names
            return self

        def cpu_seconds(self):
            return 0.0

        def close(self):
            self.closed = True

    factory = Factory()
    link = StandInLink(factory, ["softmax"])
    theirs = link.child_ends()
    assert factory.names == ["softmax"] and not set(theirs) & set(factory.fds)
    assert all(_closed(fd) for fd in factory.fds)       # the parent's copies: the stand-ins hold them
    assert link.start() == {"ok": True}
    link.close()
    assert factory.closed and link.start()["ok"] is False
    for fd in theirs:
        os.close(fd)


def _closed(fd):
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def test_a_check_reaches_another_part_only_through_the_functions_it_called():
    """What a failing check leans on is read from the functions it called and what they call, not from
    everything its part calls: causal_mask alone reaches nothing of part softmax, masked_softmax reaches
    softmax through a helper of the student's own, a probe may reach anything its part calls."""
    from selfcheck import notes
    nb = _notebook(_cell("softmax", "def softmax(z):\n    return z\n\ndef entropy_bits(p):\n    return 0", solution=True),
                   _cell("causal_mask", "def causal_mask(n):\n    return n", solution=True),
                   _cell("masked_softmax", "def masked_softmax(s, m):\n    return _mine(s)", solution=True),
                   _cell(None, "def _mine(s):\n    return softmax(s)"))
    uses = notes.Uses(nb, [{"id": "softmax", "cells": ["softmax"]},
                           {"id": "causal_mask", "cells": ["causal_mask", "masked_softmax"]}])
    assert uses.of("causal_mask", {"causal_mask"}) == {}
    assert uses.of("causal_mask", {"masked_softmax"}) == {"softmax": ["softmax"]}
    assert uses.of("causal_mask", {"projection.forward"}) == uses.of("causal_mask") == {"softmax": ["softmax"]}
    failing = {"softmax": {"softmax"}}
    assert notes.leaning_on(uses.of("causal_mask", {"causal_mask"}), failing) == ""
    assert "your `softmax` from part softmax" in notes.leaning_on(uses.of("causal_mask", {"masked_softmax"}), failing)


def test_the_self_check_refuses_a_hand_in_and_runs_the_student_s_own_work(tmp_path):
    """A notebook under a course folder's submitted/, autograded/ or feedback/, in the exchange's inbound/, or
    another account's file is refused with one line naming `course check`; a student's own folder is not."""
    from selfcheck import whose
    paths = {"own": "home/alice/attention", "course.yaml": "course/submitted/alice/attention",
             "nbgrader_config.py": "grading/autograded/alice/attention", "exchange": "ex/c/inbound/alice+attention+t+r"}
    for mark, folder in paths.items():
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "attention.ipynb").write_text("{}")
        if mark.endswith((".yaml", ".py")):
            (tmp_path / folder.split("/")[0] / mark).write_text("")
    (tmp_path / "ex" / "c" / "outbound").mkdir()
    assert whose.refusal(str(tmp_path / paths["own"] / "attention.ipynb")) is None
    for mark in ("course.yaml", "nbgrader_config.py", "exchange"):
        said = whose.refusal(str(tmp_path / paths[mark] / "attention.ipynb"))
        assert said and "a hand-in in" in said and "`course check " in said and "\n" not in said, said
    if os.getuid() == 0:
        os.chown(tmp_path / paths["own"] / "attention.ipynb", 65534, 65534)
        said = whose.refusal(str(tmp_path / paths["own"] / "attention.ipynb"))
        assert said and "belongs to the account" in said and "copy the notebook" in said, said

"""The self-check as a student meets it: the check cells executed in a real Jupyter kernel, and
``pytest`` in a released folder; plus what grading says about the same notebooks.
"""

import json
import re
import shutil
import subprocess
import sys

import pytest

from autograder.course import corpus
from autograder.grade.submission import grade_submission
from autograder.mistakes import cohort
from selfcheck.program import grade_id

pytestmark = [pytest.mark.slow, pytest.mark.corpus]   # real kernels and `pytest` in released folders

SYNTAX_ERROR = '''def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True)
    return e / e.sum(axis=axis, keepdims=True)
'''
# The experiment cell's budget, shrunk so that executing the notebook takes seconds.
BUDGET = ("STEPS, EPOCHS, TEST_BATCHES = 600, None, 300", "STEPS, EPOCHS, TEST_BATCHES = 20, None, 5")


def _student_folder(course, assignment, tmp_path, cells=None, stub=False):
    """A released folder with the notebook a student saved in it."""
    folder = tmp_path / assignment.id
    shutil.copytree(course.release(assignment), folder, ignore=shutil.ignore_patterns("__pycache__"))
    nb = cohort.stub(course, assignment) if stub else cohort.solved(course, assignment, cells)
    for cell in nb["cells"]:
        if grade_id(cell) == "run_experiment":
            assert BUDGET[0] in cell["source"], "the experiment cell's budget line changed: update BUDGET"
            cell["source"] = cell["source"].replace(*BUDGET)
    with open(folder / assignment.notebook, "w") as fh:
        json.dump(nb, fh, indent=1)
    return folder


def _execute(folder, notebook):
    """Run every cell in a fresh kernel, top to bottom, as Jupyter's Run All does."""
    import nbformat      # with nbclient, seconds to import: only for the tests that run a kernel
    from nbclient import NotebookClient
    nb = nbformat.read(folder / notebook, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def _text(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def _errors(cell):
    return [o for o in cell.get("outputs", []) if o.output_type == "error"]


def _check_cell(folder, part, separately=False):
    """What the notebook's check cell for ``part`` prints, its code cells run first, past any that
    fails, as a student runs them one by one (no kernel: the check cell reads the definitions of the
    running program's __main__); ``separately``: the finished process, its stdout and stderr apart."""
    script = ("import json, sys\n"
              "nb = json.load(open(sys.argv[1]))\n"
              "for c in nb['cells']:\n"
              "    if c['cell_type'] == 'code' and 'check(' not in ''.join(c['source']):\n"
              "        try:\n"
              "            exec(''.join(c['source']), globals())\n"
              "        except Exception:\n"
              "            pass\n"
              "from selfcheck import check\n"
              "try:\n"
              "    check(sys.argv[2])\n"
              "except Exception as exc:\n"
              "    print(type(exc).__name__)\n")
    done = subprocess.run([sys.executable, "-c", script, "attention.ipynb", part], cwd=folder,
                          capture_output=True, text=True, timeout=300)
    return done if separately else done.stdout + done.stderr


def _selfcheck(folder):
    return subprocess.run([sys.executable, "-m", "pytest"], cwd=folder, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(autouse=True)
def corpus_for_the_kernel(course, monkeypatch):
    """A student's kernel finds the corpus beside the notebook; here it is told where it is."""
    monkeypatch.setenv("TINYSHAKESPEARE", corpus.find(course))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["attention", "tiny_transformer", "weighted_attention"])
def test_check_cells_pass_on_the_solved_notebook_in_a_real_kernel(course, tmp_path, name):
    assignment = course.assignment(name)
    nb = _execute(_student_folder(course, assignment, tmp_path), assignment.notebook)
    checks = [c for c in nb.cells if (grade_id(c) or "").startswith("check_")]
    assert len(checks) == len(assignment.parts)
    for cell in nb.cells:
        assert not _errors(cell), (grade_id(cell), _errors(cell))
    for cell in checks:
        assert re.search(r"all \d+ public checks pass", _text(cell)), _text(cell)
        assert "FAIL" not in _text(cell), _text(cell)


@pytest.mark.slow
def test_a_check_cell_on_the_stub_fails_with_one_clear_exception(course, tmp_path):
    assignment = course.assignment("attention")
    nb = _execute(_student_folder(course, assignment, tmp_path, stub=True), assignment.notebook)
    for cell in (c for c in nb.cells if (grade_id(c) or "").startswith("check_")):
        assert "not written yet" in _text(cell)
        (error,) = _errors(cell)
        assert error["ename"] == "SelfCheckFailed" and "public check(s) failed" in error["evalue"]


@pytest.mark.slow
def test_a_cell_that_does_not_load_is_reported_first_with_its_name_and_line(course, tmp_path):
    """In the check cell, in pytest and in the grader's reason: cell 'softmax', line 3, first."""
    assignment = course.assignment("attention")
    folder = _student_folder(course, assignment, tmp_path, cells={"softmax": SYNTAX_ERROR})
    said = "the cell 'softmax' did not load: SyntaxError"

    nb = _execute(folder, assignment.notebook)
    check = next(c for c in nb.cells if grade_id(c) == "check_softmax")
    first = _text(check).splitlines()[0]
    assert said in first and "line 3" in first, _text(check)

    run = _selfcheck(folder)
    failures = run.stdout[run.stdout.index("= FAILURES ="):]
    first = failures.splitlines()[1:3]
    assert "every cell loads" in first[0] and said in first[1] and "line 3" in first[1], failures[:800]
    assert "a cell did not load" in failures

    record = grade_submission(course, assignment.id, "s", str(folder / assignment.notebook))
    softmax = next(p for p in record.parts if p.part == "softmax")
    assert softmax.reason.startswith(said) and "line 3" in softmax.reason, softmax.reason
    mask = next(p for p in record.parts if p.part == "causal_mask")
    assert mask.status == "passed", mask.reason        # the reference stands in for softmax


def test_a_check_that_leans_on_a_broken_part_says_so(course, tmp_path):
    """entropy_bits in nats breaks the scale experiment's public check; the self-check says why."""
    assignment = course.assignment("attention")
    mistakes, _ = cohort.catalogue(course, "softmax")
    folder = _student_folder(course, assignment, tmp_path, cells=mistakes["entropy-in-nats"]["cells"])
    run = _selfcheck(folder)
    assert run.returncode != 0
    block = run.stdout[run.stdout.index("test_scale_experiment"):]
    # only the function whose own checks fail is named, not softmax, which is right
    assert "This part uses your `entropy_bits` from part softmax, which fails" in block, block[:600]
    softmax_block = run.stdout[run.stdout.index("test_entropy_extremes"):]
    assert "This part uses" not in softmax_block.split("____")[0]


def test_the_self_check_line_follows_the_failed_lines_just_above_pytests_own(course, tmp_path):
    """The stub: every FAILED line, then `Self-check: ...`, then pytest's closing line."""
    assignment = course.assignment("attention")
    lines = _selfcheck(_student_folder(course, assignment, tmp_path, stub=True)).stdout.strip().splitlines()
    assert lines[-2].startswith("Self-check: ") and "failed" in lines[-1], lines[-6:]
    assert any(line.startswith("FAILED ") for line in lines[:-2]), lines[-6:]


def _stub_with_code_below_the_raise(course, tmp_path):
    """The stub, saved with code written below entropy_bits's `raise NotImplementedError` line."""
    assignment = course.assignment("attention")
    stub = cohort.stub(course, assignment)
    for cell in stub["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "entropy_bits":
            cell["source"] += "\n    p = np.asarray(p, dtype=float)\n    return 0.0\n"
    folder = _student_folder(course, assignment, tmp_path, stub=True)
    with open(folder / assignment.notebook, "w") as fh:
        json.dump(stub, fh)
    return folder


BELOW = "The cell entropy_bits already holds code below the `raise NotImplementedError` line, which never runs"


def test_the_untouched_stub_is_one_paragraph_not_a_section_per_check(course, tmp_path):
    """pytest on the stub: the checks that fail only because their functions still raise
    NotImplementedError are one paragraph naming those functions, not 28 alike sections; a cell with
    code left below the stub's `raise` line says that code never runs."""
    out = _selfcheck(_stub_with_code_below_the_raise(course, tmp_path)).stdout
    headers = [line for line in out.splitlines() if line.startswith("____") and "test_" in line]
    assert not headers, headers
    assert "28 checks fail only because softmax, entropy_bits, attend" in out, out[-3000:]
    assert BELOW in out, out[-3000:]


def test_the_check_cell_says_too_that_code_below_the_raise_never_runs(course, tmp_path):
    """The check cell, like pytest, names the cell whose code sits below the stub's `raise` line,
    and only that one (softmax and attend are the untouched stub)."""
    out = _check_cell(_stub_with_code_below_the_raise(course, tmp_path), "softmax")
    notes = [line for line in out.splitlines() if "below the `raise NotImplementedError` line" in line]
    assert len(notes) == 1 and BELOW in notes[0] and "softmax," not in notes[0], out[-3000:]


@pytest.mark.parametrize("front", ["pytest", "check cell"])
def test_after_fix_that_part_first_no_guess_follows(course, tmp_path, front):
    """A softmax summed over the whole array breaks the causal mask's checks: they say to fix softmax
    first, and guess no mistake of their own from the numbers it broke."""
    assignment = course.assignment("attention")
    mistakes, _ = cohort.catalogue(course, "softmax")
    folder = _student_folder(course, assignment, tmp_path, cells=mistakes["softmax-global-sum"]["cells"])
    if front == "pytest":
        # pytest's short summary repeats softmax's own messages, as wide as the terminal: leave it out
        text = _selfcheck(folder).stdout.split("short test summary info")[0]
        blocks = [b for b in text.split("____") if "fix that part first" in b]
    else:
        text = _check_cell(folder, "causal_mask")
        blocks = [b for b in text.split("  FAIL  ") if "fix that part first" in b]
    assert blocks, text[-3000:]
    assert not [b for b in blocks if "Likely mistake" in b], blocks


@pytest.mark.parametrize("front", ["pytest", "check cell"])
def test_a_check_that_never_reached_the_broken_part_names_its_own_mistake(course, tmp_path, front):
    """A softmax summed over the whole array and a transposed mask (np.triu): the mask's check calls
    causal_mask alone, which uses no function of part softmax, so it names its own likely mistake, as
    grading does; masked_softmax's check, which calls the broken softmax, still says to fix that part first."""
    assignment = course.assignment("attention")
    cells = {**cohort.catalogue(course, "softmax")[0]["softmax-global-sum"]["cells"],
             **cohort.catalogue(course, "causal_mask")[0]["mask-transposed"]["cells"]}
    folder = _student_folder(course, assignment, tmp_path, cells=cells)
    if front == "pytest":
        text = _selfcheck(folder).stdout.split("short test summary info")[0]
        blocks = {b.split()[0]: b for b in text.split("____ ")[1:]}
        mask, masked = blocks["test_causal_mask_first_and_last_rows"], blocks["test_masked_softmax_rows_sum_to_one"]
    else:
        text = _check_cell(folder, "causal_mask")
        blocks = text.split("  FAIL  ")
        mask = next(b for b in blocks if b.startswith("the first position sees only itself"))
        masked = next(b for b in blocks if b.startswith("masked_softmax of a 5 x 5 example"))
    assert "Likely mistake: the mask is transposed" in mask and "(np.tril, not np.triu)" in mask, mask
    assert "fix that part first" not in mask, mask
    assert "This part uses your `softmax` from part softmax" in masked and "Likely mistake" not in masked, masked
    if front == "pytest":
        record = grade_submission(course, assignment.id, "s", str(folder / assignment.notebook))
        graded = next(p for p in record.parts if p.part == "causal_mask")
        assert "the mask is transposed" in graded.reason, graded.reason    # the reference stands in for softmax


@pytest.mark.parametrize("where", ["collected", "own folder"])
def test_pytest_in_a_collected_hand_in_refuses_to_run_it(course, tmp_path, where):
    """collect puts the release's conftest.py beside each hand-in in submitted/: `pytest` there would run
    the student's code unconfined, as the grading account, so it stops first with one line naming
    `course check`; the same notebook in a student's own folder runs, its top-level line included."""
    assignment = course.assignment("attention")
    marker = tmp_path / "written-by-the-student"
    code = next(c["source"] for c in cohort.solved(course, assignment)["cells"] if grade_id(c) == "softmax")
    folder = _student_folder(course, assignment, tmp_path / "work",
                             cells={"softmax": f"open({str(marker)!r}, 'w').close()\n{code}"})
    if where == "collected":
        course_folder = tmp_path / "course"
        (course_folder / "submitted" / "alice").mkdir(parents=True)
        (course_folder / "course.yaml").write_text("course_id: x\n")
        folder = folder.rename(course_folder / "submitted" / "alice" / assignment.id)
    run = _selfcheck(folder)
    if where == "collected":
        assert run.returncode == 2 and not marker.exists(), run.stdout[-2000:]
        said = [line for line in (run.stdout + run.stderr).splitlines() if "not checked" in line]
        assert len(said) == 1 and "a hand-in in the course folder" in said[0] and "`course check " in said[0], said
    else:
        assert run.returncode == 0 and marker.exists(), run.stdout[-2000:]


WARNING_ENTROPY = '''def entropy_bits(p):
    p = np.asarray(p, dtype=float).ravel()
    return float(-np.where(p > 0, p * np.log2(p), 0.0).sum())
'''


def test_a_warning_of_correct_code_is_a_note_on_stdout_never_stderr(course, tmp_path):
    """nbgrader's Validate fails a check cell that writes to stderr: a correct entropy that warns
    (np.where computes log2 of the zero weights before it drops them) passes, and its warning is
    a note on stdout."""
    folder = _student_folder(course, course.assignment("attention"), tmp_path, cells={"entropy_bits": WARNING_ENTROPY})
    done = _check_cell(folder, "softmax", separately=True)
    assert "Warning" not in done.stderr, done.stderr
    assert re.search(r"softmax: all \d+ public checks pass", done.stdout), done.stdout[-2000:]
    assert "note  your code warned (not a failure): RuntimeWarning: divide by zero encountered in log2" in done.stdout


SLOW_SOFTMAX = '''import time as _time


def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    if z.shape == (3, 5):           # correct, but slow on the public check's 3 x 5 scores: 0.7 s of CPU
        began = _time.process_time()
        while _time.process_time() - began < 0.7:
            pass
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''


@pytest.mark.parametrize("front", ["pytest", "check cell"])
def test_a_call_past_half_its_limit_is_named_though_it_passes(course, tmp_path, front):
    """A correct call that uses more than half of the CPU time a call may use passes, and the
    self-check names it, with the limit grading holds it to (here 1 s, set in the manifest)."""
    folder = _student_folder(course, course.assignment("attention"), tmp_path, cells={"softmax": SLOW_SOFTMAX})
    manifest = folder / "selfcheck" / "manifest.json"
    info = json.loads(manifest.read_text())
    info["limits"]["time_per_test"] = 1.0
    manifest.write_text(json.dumps(info))
    if front == "pytest":
        text = _selfcheck(folder).stdout
        lines = text.strip().splitlines()
        assert lines[-2].startswith("Self-check: all"), text[-2000:]
        assert re.match(r"Note: `softmax` used 0\.[6-9] s of CPU time in one call, more than half of the 1 s", lines[-3]), \
            text[-2000:]
    else:
        text = _check_cell(folder, "softmax")
        assert re.search(r"softmax: all \d+ public checks pass", text), text[-2000:]
        assert re.search(r"note  `softmax` used 0\.[6-9] s of CPU time in one call, more than half of the 1 s", text), \
            text[-2000:]

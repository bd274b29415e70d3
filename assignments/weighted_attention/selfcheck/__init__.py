"""The student's self-check, also the grader's runner (see :mod:`selfcheck.student`).

In a notebook, ``check("softmax")`` runs that part's public checks against the
functions defined in the notebook right now; ``pytest`` in the assignment
folder runs all of them against the saved notebook in a fresh process.
"""

import functools
import importlib.util
import os
import warnings


class SelfCheckFailed(Exception):
    """A check cell whose part does not pass its public checks: the first failure, the lines above all."""

    def _render_traceback_(self):
        """IPython shows this one line instead of a traceback into the runner (and so does Validate)."""
        return [f"SelfCheckFailed: {self}"]


def _public_tests(path):
    """(name, test taking the student) for every test in a public file, parametrized ones expanded."""
    spec = importlib.util.spec_from_file_location(f"public_{os.path.basename(path)[:-3]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = []
    for name, fn in vars(module).items():
        if not (name.startswith("test_") and callable(fn)):
            continue
        cases: list[tuple[str, dict]] = [("", {})]
        for mark in getattr(fn, "pytestmark", []):
            if mark.name == "parametrize":
                names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else mark.args[0]
                values = [v if len(names) > 1 else (v,) for v in mark.args[1]]
                ids = mark.kwargs.get("ids") or [",".join(map(str, v)) for v in values]
                cases = [(f"{label} [{i}]", dict(case, **dict(zip(names, value))))
                         for label, case in cases for i, value in zip(ids, values)]
        tests += [(name + label, functools.partial(fn, **case) if case else fn) for label, case in cases]
    return tests


def _run(tests, student):
    """(first line of the check, None or the reason it failed, that reason without its likely
    mistake, the names it called) for each test."""
    from selfcheck import notes
    from selfcheck.checks import CheckFailed, label
    from selfcheck.errors import StudentError

    for name, fn in tests:
        what = label(getattr(fn, "func", fn).__doc__ or name, getattr(fn, "keywords", None))
        student.called.clear()
        try:
            fn(student)
        except (CheckFailed, StudentError) as exc:
            yield what, str(exc), notes.finding(exc), set(student.called)
        except Exception as exc:  # noqa: BLE001 - report, never crash the notebook
            yield what, f"{type(exc).__name__}: {exc}", f"{type(exc).__name__}: {exc}", set(student.called)
        else:
            yield what, None, None, set(student.called)


def check(part: str, folder: str = ".") -> None:
    """Run one part's public checks on this notebook's current definitions and print them.

    Cells of the saved notebook that do not compile are reported first; a check
    that uses a function of another part which fails its own checks says so.
    Raises :class:`SelfCheckFailed` at the end when anything failed, naming the first failure:
    nbgrader's Validate shows a failing cell's error only, not what it printed.
    """
    import __main__

    from selfcheck import manifest, notes
    from selfcheck.program import NotebookError, program, read_notebook
    from selfcheck.local_student import LocalStudent

    info = manifest.read(folder)
    tests = {p["id"]: os.path.join(folder, p["tests"]) for p in info["parts"]}
    entry = next(p for p in info["parts"] if p["id"] == part)
    try:
        nb = read_notebook(os.path.join(folder, info["notebook"]))
    except NotebookError:
        nb = None
    unloaded = notes.syntax_errors(nb) if nb else []
    for line in unloaded:
        print(f"  FAIL  {line} (in the notebook as last saved)")
    per_call = manifest.limits(info).time_per_test
    student = LocalStudent(vars(__main__), per_call)
    # nbgrader's Validate counts anything a check cell writes to stderr as a failure: a warning of
    # the student's code (numpy's RuntimeWarning) is kept and said on stdout, after the checks
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("default")
        passed, failures = _check(part, student, nb, info, tests, unloaded)
    kit = os.path.dirname(os.path.abspath(__file__))     # the checks' own warnings are no news to the student
    for shown in dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in warned
                               if not os.path.abspath(w.filename).startswith(kit + os.sep)):
        print(f"  note  your code warned (not a failure): {shown}")
    for line in notes.slow(student.slow_calls, per_call):
        print(f"  note  {line}")
    if nb and student.unwritten:
        code = {cell[0]: cell[1] for cell in program(nb).cells if len(cell) == 2}
        below = notes.code_below(sorted(student.unwritten), notes.unwritten(code), code)
        if below:
            print(f"  note  {below} (in the notebook as last saved)")
    print(f"{part}: " + notes.closing(passed, len(failures), entry["hidden_checks"]))
    if failures:
        raise SelfCheckFailed(f"{part}: {len(failures)} public check(s) failed; the first:\n  {failures[0]}\n"
                              "This cell's output above lists every check.") from None


def _check(part, student, nb, info, tests, unloaded):
    """Run the part's public checks, printing a line each: (passed, failures)."""
    from selfcheck import notes
    uses = notes.Uses(nb, info["parts"]) if nb else None
    failing = {}
    for other in uses.of(part) if uses else {}:
        others = _public_tests(tests[other])
        failed = [fn for (_, fn), (_, reason, _, _) in zip(others, _run(others, student)) if reason]
        if failed:
            failing[other] = set().union(*(notes.checked_names(fn) for fn in failed))
    passed, failures = 0, list(unloaded)
    for what, reason, plain, called in _run(_public_tests(tests[part]), student):
        lean = notes.leaning_on(uses.of(part, called), failing) if uses and reason else ""
        reason = plain if lean else reason        # a broken helper explains it, not a guess
        if reason is None:
            passed += 1
            print(f"  ok    {what}")
        else:
            failures.append(f"{what}\n  " + (f"{lean}\n  " if lean else "") + reason)
            print(f"  FAIL  {what}\n        " + (f"{lean}\n        " if lean else "") + reason)
    return passed, failures

"""The student's self-check, also the grader's runner (see :mod:`selfcheck.student`).

In a notebook, ``check("softmax")`` runs that part's public checks against the
functions defined in the notebook right now; ``pytest`` in the assignment
folder runs all of them against the saved notebook in a fresh process.
"""

import importlib.util
import json
import os


def _public_tests(path):
    spec = importlib.util.spec_from_file_location(f"public_{os.path.basename(path)[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [(name, fn) for name, fn in vars(module).items()
            if name.startswith("test_") and callable(fn)]


def check(part, folder="."):
    """Run one part's public checks on this notebook's current definitions and print them."""
    import __main__

    from selfcheck.checks import CheckFailed
    from selfcheck.student import LocalStudent, StudentError

    with open(os.path.join(folder, "selfcheck", "manifest.json")) as fh:
        info = json.load(fh)
    entry = next(p for p in info["parts"] if p["id"] == part)
    student = LocalStudent(vars(__main__))
    passed = 0
    tests = _public_tests(os.path.join(folder, entry["tests"]))
    for name, fn in tests:
        what = (fn.__doc__ or name).strip().splitlines()[0]
        try:
            fn(student)
        except (CheckFailed, StudentError) as exc:
            print(f"  FAIL  {what}\n        {getattr(exc, 'message', None) or exc}")
        except Exception as exc:  # noqa: BLE001 - report, never crash the notebook
            print(f"  FAIL  {what}\n        {type(exc).__name__}: {exc}")
        else:
            passed += 1
            print(f"  ok    {what}")
    print(f"{part}: {passed} of {len(tests)} public checks pass. "
          f"Grading adds {entry['hidden_checks']} hidden checks.")
    if passed < len(tests):
        raise AssertionError(f"{part}: {len(tests) - passed} of {len(tests)} public checks failed (see above)")

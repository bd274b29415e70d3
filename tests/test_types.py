"""The type check: mypy over autograder/ and selfcheck/, configured in pyproject.toml.

Its cache (.mypy_cache) makes a run after the first take a second or two.
"""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_grader_and_the_self_check_kit_type_check():
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert "No module named mypy" not in run.stderr, "the type checker is missing: pip install -e '.[types]'"
    assert run.returncode == 0, run.stdout + run.stderr

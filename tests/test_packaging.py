"""A non-editable install (`pip install .`, as a course server's environment may be made) holds
every module of the grader and the kit, and the pages' templates: a page renders from it alone."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RENDER = """
import autograder, sys
from autograder.records.results import PartResult, Submission
from autograder.report import cohort_analysis, cohort_page, feedback
assert autograder.__file__.startswith(sys.argv[1]), autograder.__file__
record = Submission("s", "a", "a.ipynb", [PartResult("p", 1, 2, "partial", "why")])
print(feedback.feedback_page(record))
print(cohort_page.page(type("Course", (), {"course_id": "c", "similarity_threshold": 0.5}),
                       cohort_analysis.Report()))
"""


@pytest.mark.slow
def test_a_wheel_holds_every_module_and_renders_the_pages_from_its_templates(tmp_path):
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "pyproject.toml",
                             "autograder", "selfcheck"], cwd=ROOT, capture_output=True, text=True, check=True)
    tracked = [name for name in listed.stdout.split() if os.path.isfile(os.path.join(ROOT, name))]
    source = tmp_path / "source"       # what a clone holds: no build folder, no egg-info
    for name in tracked:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.path.join(ROOT, name), source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path / "dist"),
                            str(source)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel, = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        shipped = set(zf.namelist())
        zf.extractall(tmp_path / "installed")
    wanted = {name for name in tracked if name.endswith(".py") or "/templates/" in name}
    assert not wanted - shipped, sorted(wanted - shipped)

    installed = str(tmp_path / "installed")
    shown = subprocess.run([sys.executable, "-c", RENDER, installed], capture_output=True, text=True, timeout=120,
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": installed})
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert shown.stdout.count(":root{--ink:") == 2 and "Cohort report: c" in shown.stdout

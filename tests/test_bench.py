"""`make bench` on a tiny cohort and a term of four students, so that it cannot break unnoticed:
every figure it is to reach is printed with its target, beside where the time went."""

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.corpus]   # grades, runs nbgrader and the self-check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def _run(*argv):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), MPLBACKEND="Agg")
    # a smoke run checks that the bench runs to the end and prints every figure: its `course grade`
    # takes the verdicts the tests keep (its breakdown, and `make bench`, grade for real)
    done = subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_grading_bench_runs_to_the_end_and_prints_every_figure_with_its_target():
    out = _run(os.path.join("bench", "grading.py"), "--smoke")
    figures = out[out.index("the figures to reach"):]
    for label, target in (("--jobs 1 against plain nbgrader", "<= 1.0x"), ("--jobs 2 against plain nbgrader", "<= 0.5x"),
                          ("attention: course grade --jobs 1", "<= 0.5x"),
                          ("tiny_transformer: course grade --jobs 1", "<= 0.5x"),
                          ("self-check in released attention/", "< 1 s"), ("scaling efficiency", ">= 85%"),
                          ("overhead against local", "<= 10%"),
                          ("weighted_attention/projection_removal: against its floor", "<= 3.0x"),
                          ("attention/causal_mask: against its floor", "<= 3.0x")):
        line = next((li for li in figures.splitlines() if label in li), None)
        assert line and f"target {target}" in line, (label, figures)
    assert "the reference's same call in a plain process on one BLAS thread" in out, out
    assert "a smoke run" in figures and "NOT MET" not in figures, figures      # a smoke run's values are not judged
    where = out[out.index("where the time goes"):out.index("the figures to reach")]
    for step in ("sandbox set-up", "starting bubblewrap", "Python and numpy start (until ready)", "pytest collection", "calls (round trips)", "training runs (calls)",
                 "experiment runs (calls)",
                 "gradebook (nbgrader autograde)", "exports and feedback", "weighted_attention/projection_removal"):
        assert step in where, (step, where)
    assert "similarity flags, this cohort" in out


def test_the_term_bench_runs_to_the_end_and_prints_every_figure_with_its_target():
    out = _run(os.path.join("bench", "term.py"), "--smoke")
    for stage in ("reading the gradebook", "nbgrader export", "feedback export", "of which similarity",
                  "course status", "one-student regrade", "gradebook, per new hand-in", "peak memory, exports"):
        assert stage in out, (stage, out)
    figures = out[out.index("the figures to reach"):]
    assert "of which nbgrader's autograde" in out, out
    for label, target in (("every stage after grading, per hand-in", "<= 0.05 s"), ("one-student regrade", "< 10 s"),
                          ("similarity, every assignment", "< 60 s"), ("course status", "< 2 s")):
        line = next((li for li in figures.splitlines() if label in li), None)
        assert line and f"target {target}" in line, (label, figures)
    assert "hand-ins an hour" in figures and "warning" not in out, out


def test_the_training_step_bench_runs_on_a_few_steps():
    out = _run(os.path.join("bench", "train_step.py"), "--steps", "3", "--rounds", "1", "--warmup", "2")
    assert "ms/step" in out and "numpy framework" in out, out

"""The benches' "figures to reach": a figure not met says why, measured in the same run, and a
figure that could not be measured is not called met (bench/grading.py, bench/term.py)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import grading  # noqa: E402 - bench/grading.py
import term  # noqa: E402 - bench/term.py


def test_a_grading_figure_not_met_says_why_and_a_smoke_run_judges_nothing(capsys):
    grading.figure("a part: against its floor", 3.4, "<= 3.0x", False, why="its stand-ins' round trips")
    grading.figure("another: against its floor", 3.4, "<= 3.0x", False)
    grading.figure("a third: against its floor", 1.2, "<= 3.0x", True, why="never shown")
    grading.figure("a smoke figure", 3.4, "<= 3.0x", False, why="never shown", judged=False)
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("NOT MET") and out[1] == "    why: its stand-ins' round trips"
    assert out[2].endswith("NOT MET") and out[3].startswith("    why: no cause measured in this run")
    assert out[4].endswith("met") and out[5].endswith("(smoke run)") and len(out) == 6


def _results(regrade, sizes=(60, 600)):
    """A term's measured results, as bench/term.py's measure_term returns them, at ``sizes``."""
    found = {}
    for n in sizes:
        hand_ins = 3 * n
        seconds = {"reading the records": 1e-4 * hand_ins, "feedback export": 1e-3 * hand_ins,
                   "course status": 0.5, "course history <student>": 0.3, "one-student regrade": regrade,
                   "  of which grading its notebooks": 4.0, "gradebook, per new hand-in": 0.03,
                   "  the same in one process": 0.05,
                   "  of which nbgrader's autograde": 0.02, "  of which similarity": 2.0}
        found[n] = (hand_ins, seconds, {"exports": 100, "similarity": 100, "regrade": 100},
                    f"the regrade's {regrade} s: grading 4.0, feedback export 7.0")
    return found


def test_a_term_figure_not_met_says_why(capsys):
    assert term.report("sqlite", [60, 600], _results(12.0)) is False
    out = capsys.readouterr().out
    out = out[out.index("the figures to reach"):]
    regrade = out[out.index("one-student regrade"):].splitlines()
    assert regrade[0].rstrip().endswith("NOT MET"), out
    assert regrade[1].strip() == "why: the regrade's 12.0 s: grading 4.0, feedback export 7.0", out
    assert "why:" not in out.replace(regrade[1], ""), out          # every other figure met


def test_growth_from_one_size_is_not_measured_and_not_called_met(capsys):
    assert term.report("sqlite", [60], _results(5.0, sizes=(60,))) is True
    line = next(li for li in capsys.readouterr().out.splitlines() if "no stage grows faster" in li)
    assert "not measured (one size)" in line and "met" not in line, line

"""One part's slowness costs no other part its points.

A part that uses another part's functions runs the student's own once that part earned full
marks; when it then times out, it is graded again with the reference standing in, and
the better result is kept, saying so. A timeout is named in the first line, with its call.
"""

import pytest

from autograder.grade import submission, suites
from autograder.mistakes import cohort
from autograder.records.results import Check, PartResult

# correct, but pure Python with a short pause per call: fine for softmax's own checks, far too
# slow for the thousands of calls the scale experiment makes
SLOW_SOFTMAX = '''
def softmax(z, axis=-1):
    """Weights that sum to 1 along `axis`, one row at a time."""
    import math
    import time
    time.sleep(0.01)
    moved = np.moveaxis(np.asarray(z, dtype=float), axis, -1)
    rows = []
    for row in moved.reshape(-1, moved.shape[-1]).tolist():
        top = max(row)
        e = [0.0 if v == -math.inf else math.exp(v - top) for v in row]
        rows.append([v / sum(e) for v in e])
    return np.moveaxis(np.array(rows).reshape(moved.shape), -1, axis)
'''


def _tight(raw):
    """Limits a slow call reaches in seconds, not minutes, with room for the thousands of calls the
    stand-ins answer (the longest, 8,000 of them, takes about 1 s of CPU time: limits count CPU
    time, which a loaded machine does not stretch)."""
    raw["limits"].update(time_per_test=3, time_per_part=30)


@pytest.mark.slow      # grades a notebook in real sandboxes
def test_a_slow_but_correct_softmax_costs_the_causal_mask_part_nothing(course_copy, tmp_path):
    course = course_copy(_tight)
    assignment = course.assignment("attention")
    path = cohort.write(cohort.solved(course, assignment, {"softmax": SLOW_SOFTMAX}), str(tmp_path / "in"),
                        "slow", assignment)
    record = submission.grade_submission(course, "attention", "slow", path)
    parts = {p.part: p for p in record.parts}
    assert parts["softmax"].status == "passed", parts["softmax"].reason
    mask = parts["causal_mask"]
    assert mask.score == mask.max_score, mask.reason
    assert "with your own part softmax" in mask.reason and "Timed out: " in mask.reason, mask.reason
    # the pauses exhaust either the CPU budget or the waiting budget first, depending on the load
    assert "running scale_experiment" in mask.reason.split("Timed out: ", 1)[1], mask.reason


def test_a_timeout_is_named_first_with_the_call_that_took_too_long():
    """Not the first failing check's words, nor a check the timeout left unrun: the call itself."""
    checks = [Check("a", "softmax sums to 1", "public", 1, "failed", "softmax sums to 1: expected 1, got 0.9"),
              Check("b", "the scale experiment", "hidden", 1, "timeout", "later: not run: 2 earlier calls took more"),
              Check("c", "the scale experiment", "hidden", 1, "timeout",
                    "the scale experiment: running scale_experiment took more than 1 s of CPU time"),
              Check("d", "ok", "public", 1, "passed")]
    first = suites._reason(PartResult("scale", 1, 3, "partial", "", checks), []).split(". ")[0]
    assert first.startswith("Timed out: ") and "running scale_experiment took more" in first, first


# softmax loses marks (no shift: nan for large scores), so the reference stands in for it
UNSHIFTED_SOFTMAX = '''
def softmax(z, axis=-1):
    e = np.exp(np.asarray(z, dtype=float))
    return e / np.sum(e, axis=axis, keepdims=True)
'''

# correct, but it makes one call too large for the stand-ins' channel (and goes on without it),
# then calls softmax from four threads at once
THREADED_MASKED_SOFTMAX = '''
def masked_softmax(scores, mask):
    import concurrent.futures
    try:
        softmax(np.zeros(3_000_000))
    except Exception as exc:
        assert "MB" in str(exc), exc
    scores = np.where(mask, np.asarray(scores, dtype=float), -np.inf)
    rows = scores.reshape(-1, scores.shape[-1])
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        out = list(pool.map(softmax, rows))
    return np.array(out).reshape(scores.shape)
'''


@pytest.mark.slow      # grades a notebook in real sandboxes
def test_the_stand_ins_answer_threads_in_turn_and_refuse_a_call_too_large_without_closing(course, tmp_path):
    """A part's correct code keeps its points with the reference standing in: calls from several
    threads take turns on the one channel, and a call past the channel's size is refused, named,
    while the calls after it are answered."""
    assignment = course.assignment("attention")
    path = cohort.write(cohort.solved(course, assignment, {"softmax": UNSHIFTED_SOFTMAX,
                                                           "masked_softmax": THREADED_MASKED_SOFTMAX}),
                        str(tmp_path / "in"), "threads", assignment)
    record = submission.grade_submission(course, "attention", "threads", path)
    parts = {p.part: p for p in record.parts}
    assert parts["softmax"].score < parts["softmax"].max_score, parts["softmax"].reason
    mask = parts["causal_mask"]
    assert mask.score == mask.max_score, mask.reason


def test_a_channel_that_stopped_answering_is_named_first_without_a_guessed_mistake():
    """When a stand-in's channel is gone every later call of the part fails with it: the reason
    quotes that, not a likely mistake the failures seem to point to."""
    stopped = ("masked_softmax of a 5 x 5 example: StandInError: `softmax` (another part's function, answered "
               "by the grader) stopped answering: an earlier call to it was cut short by an exception raised while it waited")
    checks = [Check("a", "rows sum to 1", "public", 1, "failed", stopped, mistake="mask-2d-only",
                    diagnosis="the code assumes 2-D scores"),
              Check("b", "ok", "public", 1, "passed")]
    part = PartResult("causal_mask", 1, 2, "partial", "", checks)
    assert part.diagnosis[1], "the example needs a likely mistake to leave out"
    reason = suites._reason(part, [])
    assert reason.startswith("1 of 2 checks did not pass; first: ") and "stopped answering" in reason, reason

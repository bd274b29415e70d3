"""What grading a submission produces: the submission, its parts, each part's checks.

Defined once here; grading builds them, ``results/<student>/<assignment>.json`` keeps them
(:meth:`Submission.to_json`), and every export, the gradebook and the regrade diff read them.
A record written by an earlier version of the grader still loads (:meth:`Submission.from_json`):
version 1 had no ``version`` key and no ``Check.mistake``; up to version 2 a check's ``message``
held its diagnosis in words and no ``diagnosis`` beside it; up to version 3 a record had no
``by_hand`` and no ``exported_at`` (it was exported when graded: its ``exported_at`` is read as
its ``graded_at``).
"""

import dataclasses
import functools
from dataclasses import dataclass, field

from selfcheck.causes import said

VERSION = 4
GRADER_ERROR = "grader-error"     # a part the grader failed on: no score is the student's
NOT_ATTEMPTED = "not attempted"   # a part whose cells are as released: 0, and nothing went wrong


@dataclass
class Check:
    """One test of a part's public or hidden suite, as the grader judged it."""
    name: str                  # the test function (with its parameters)
    doc: str                   # the first line of its docstring: what it checks, in words
    visibility: str            # "public" (the student can run it) or "hidden"
    weight: float
    status: str                # passed, failed, error, timeout or missing
    message: str = ""          # why it did not pass (what came back), clean text for the student
    mistake: str | None = None   # the id of the mistake the check diagnosed (docs/mistakes.json), when one
    diagnosis: str | None = None  # that mistake in words, as the check wrote it

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def said(self) -> str:
        """The whole message a student reads: what came back, then the likely mistake."""
        return said(self.message, self.diagnosis)


@dataclass
class PartResult:
    """One graded part of a submission: its score out of the points course.yaml gives it."""
    part: str                  # the part's id in course.yaml
    score: float
    max_score: float
    status: str                # passed, partial, failed, error, timeout, missing, not attempted or grader-error
    reason: str                # the first thing the student should read
    checks: list[Check] = field(default_factory=list)
    suite: str | None = None   # hash of its public and hidden suites at grading
    seconds: float = 0.0

    @property
    def graded(self) -> bool:
        """False when the grader failed on it: then its score is nobody's."""
        return self.status != GRADER_ERROR

    @property
    def diagnosis(self) -> tuple[str | None, str | None]:
        """(mistake id, words) of the mistake its failing checks name most, or (None, None).

        Each failing check counts its weight, shared among the mistakes it could not tell apart;
        the part's reason starts with these words and the cohort report counts this id."""
        counts: dict[str, float] = {}
        ids: dict[str, str | None] = {}
        for check in self.checks:
            if check.passed or not check.diagnosis:
                continue
            alternatives = len((check.mistake or "").split(" or "))
            counts[check.diagnosis] = counts.get(check.diagnosis, 0) + check.weight / alternatives
            ids.setdefault(check.diagnosis, check.mistake)
        if not counts:
            return None, None
        words = max(counts, key=lambda text: counts[text])
        return ids[words], words


@dataclass(frozen=True)
class Lateness:
    """What lateness cost one hand-in, as the late rule found it (:func:`autograder.course.late.assess`);
    a hand-in within the grace has one, with 0 points. Times are ISO 8601 in UTC."""
    due: str                  # the due date it was held to
    due_from: str             # "due" (the assignment's) or "extension" (the student's)
    submitted: str
    minutes_late: float
    rule: str                 # the late rule in words
    fraction: float           # of the points earned it loses
    points: float             # the points it loses


@dataclass
class Submission:
    """One student's notebook for one assignment, graded."""
    student: str
    assignment: str
    notebook: str
    parts: list[PartResult] = field(default_factory=list)
    problem: str | None = None     # why no part could be graded normally (the student's or the grader's)
    grader: str | None = None      # the grader's version
    sha256: str | None = None      # of the notebook as handed in
    suites: dict | None = None     # part -> the version of what decides its score
    graded_at: str | None = None
    seconds: float | None = None
    submitted_at: str | None = None   # collect's time of the hand-in, ISO 8601 in UTC; None: not known
    late: Lateness | None = None   # what lateness cost it at the last export
    # the points formgrader added to its parts' scores at the last export (hand-graded answers, a
    # part's score set by hand), kept for `course history` alone: the gradebook is where they live
    by_hand: float | None = None
    exported_at: str | None = None    # when an export last worked out its late penalty and by_hand

    @property
    def key(self) -> tuple[str, str]:
        return self.student, self.assignment

    @property
    def score(self) -> float:
        return sum(p.score for p in self.parts)

    @property
    def max_score(self) -> float:
        return sum(p.max_score for p in self.parts)

    @property
    def late_points(self) -> float:
        """The points its late penalty takes (0 when on time)."""
        return self.late.points if self.late else 0.0

    @property
    def grader_error(self) -> bool:
        """The grader failed on it: nothing about this student may be recorded, not even a 0."""
        return str(self.problem or "").startswith("grader error")

    def to_json(self) -> dict:
        """As ``dataclasses.asdict`` gives it, in a fifth of the time (a term writes thousands)."""
        return {"version": VERSION, **vars(self),
                "parts": [{**vars(p), "checks": [dict(vars(c)) for c in p.checks]} for p in self.parts],
                "late": dict(vars(self.late)) if self.late else None}

    @classmethod
    def from_json(cls, data: dict) -> "Submission":
        """A record from its JSON (any version so far); ValueError when it is not one."""
        if isinstance(data, dict) and data.get("version", 1) < 4 and "exported_at" not in data:
            data = {**data, "exported_at": data.get("graded_at")}     # every batch then exported as it ended
        try:
            parts = [PartResult(**{**_known(PartResult, p),
                                   "checks": [Check(**_known(Check, c)) for c in p.get("checks") or []]})
                     for p in data["parts"]]
            late = Lateness(**_known(Lateness, data["late"])) if data.get("late") else None
            return cls(**{**_known(cls, data), "parts": parts, "late": late})
        except (AttributeError, KeyError, TypeError) as exc:
            raise ValueError(f"not a result record ({type(exc).__name__}: {exc})") from None


@functools.cache
def _names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def _known(cls, data):
    """The items of ``data`` that are fields of ``cls`` (a newer grader's extra keys are left out);
    ``data`` itself when it has no others, as nearly every record does (a term reads 200,000)."""
    names = _names(cls)
    if names.issuperset(data):
        return data
    return {k: v for k, v in data.items() if k in names}

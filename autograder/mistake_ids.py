"""Which catalogued mistake a failing check diagnosed: its name in tests/mutants/<part>.py.

The suites diagnose in words ("Likely mistake: ..."); the cohort report counts by
name, so that rewording a message never changes a count. The words each catalogued
mistake produces at grading are those `course mistakes` recorded in docs/mistakes.md
(kept current by tests/test_mutants.py); a check whose diagnosis is one of them gets
that mistake's name. Two mistakes the grader cannot tell apart share one id, their
names joined by " or ".
"""

import os
import re

from selfcheck.checks import LIKELY, diagnoses

_PART = re.compile(r"^## (\w+) \(")
_NAME = re.compile(r"^### `(.+)`$")
_REASON = re.compile(r"^> Likely mistake: (.+?)\. \d+ of \d+ checks did not pass")
_TABLES: dict = {}


def comparable(text):
    """A diagnosis with its numbers blanked: they are rounded differently from machine to machine."""
    return re.sub(r"\d+", "#", text.strip().rstrip("."))


def table(root):
    """part -> {comparable diagnosis: mistake id}, read from the course's docs/mistakes.md."""
    if root not in _TABLES:
        found = {}
        path = os.path.join(root, "docs", "mistakes.md")
        text = ""
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        part = name = None
        for line in text.splitlines():
            if _PART.match(line):
                part = _PART.match(line).group(1)
            elif _NAME.match(line):
                name = _NAME.match(line).group(1)
            elif _REASON.match(line) and part and name:
                names = found.setdefault(part, {}).setdefault(comparable(_REASON.match(line).group(1)), [])
                if name not in names:
                    names.append(name)
                name = None       # only the grading line names the mistake, not the self-check's
        _TABLES[root] = {part: {text: " or ".join(names) for text, names in by_text.items()}
                         for part, by_text in found.items()}
    return _TABLES[root]


def identify(root, part_id, check):
    """The id of the catalogued mistake a check diagnosed, or None (passed, or no catalogued match)."""
    if check.passed:
        return None
    known = table(root).get(part_id, {})
    # A student's own error text can say anything, "Likely mistake: ..." included: only a failed
    # check's last diagnosis is the grader's (it ends the message); an error's words are numpy's
    # (the shapes that do not line up), never a "Likely mistake" the student wrote.
    said = LIKELY.findall(check.message)
    text = f"Likely mistake: {said[-1]}." if check.status == "failed" and said else \
        LIKELY.sub("", check.message) if check.status == "error" else ""
    found = diagnoses([{"message": text, "weight": check.weight}])
    return next((known[comparable(text)] for text in found if comparable(text) in known), None)


def part_mistake(checks):
    """The mistake a part's failing checks name most (weighted as the part's reason weighs them), or None.

    Results of earlier graders load with no ``mistake``: they name none."""
    weights = {}
    for check in checks:
        if check.mistake and not check.passed:
            weights[check.mistake] = weights.get(check.mistake, 0) + check.weight
    return max(weights, key=lambda m: weights[m]) if weights else None

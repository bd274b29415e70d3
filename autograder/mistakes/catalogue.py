"""The catalogue of mistakes, graded: what the mutation check checks and what docs/mistakes.md shows.

Every part's ``parts/<part>/mistakes.py`` lists realistic mistakes and correct
variants, each replacing whole solution cells of the reference; ``parts/<part>/held_out.py``
beside it lists mistakes no diagnosis was written from. ``grade`` grades
every entry (plus the untouched stub and a student who wrote only this part) exactly
as ``course grade`` would, grading that one part only. ``catalogue`` keeps, for every
catalogued mistake, the words a student sees and the mistake id the grader diagnosed,
as data (docs/mistakes.json); ``page`` renders docs/mistakes.md from that data.
``course mistakes`` writes both; tests/test_mutants.py keeps them current.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from autograder.grade.submission import grade_submission
from autograder.mistakes import cohort
from selfcheck.program import grade_id, read_notebook, source

if TYPE_CHECKING:
    from autograder.course.config import Assignment, Course, Part

PAGE = os.path.join("docs", "mistakes.md")
DATA = os.path.join("docs", "mistakes.json")


def cases(course: Course, assignment: Assignment, part: Part) -> list[tuple[str, str, dict]]:
    """(kind, name, entry) of the part: its mistakes, its held-out mistakes, its correct variants, 'only this
    part' and the stub."""
    mistakes, correct = cohort.catalogue(course, part.id)
    found = [("mistake", name, entry) for name, entry in mistakes.items()]
    found += [("held-out", name, entry) for name, entry in cohort.catalogue(course, part.id, held_out=True)[0].items()]
    found += [("correct", name, {"cells": entry.get("cells", entry)}) for name, entry in correct.items()]
    release = read_notebook(course.release(assignment, assignment.notebook))
    stubs = {grade_id(c): source(c) for c in release["cells"] if grade_id(c)}
    others = [cell for other in assignment.parts if other.id != part.id for cell in other.cells]
    found.append(("correct", f"only-{part.id}-written", {"cells": {cell: stubs[cell] for cell in others}}))
    found.append(("stub", f"{part.id}-untouched", {"cells": {cell: stubs[cell] for cell in part.cells}}))
    return found


def _grade(task):
    course, assignment_id, part_id, student, path, passed = task
    part = grade_submission(course, assignment_id, student, path, only={part_id}, passed=passed).parts[0]
    result = {k: getattr(part, k) for k in ("part", "score", "max_score", "status", "reason")}
    result["mistake"], result["diagnosis"] = part.diagnosis
    result["hidden"] = {c.name for c in part.checks if c.visibility == "hidden"}
    result["failing"] = {c.name for c in part.checks if c.status != "passed"}
    result["public_failing"] = [c for c in part.checks if c.visibility == "public" and c.status != "passed"]
    result["checks"] = list(part.checks)
    return result


def grade(course: Course, folder: str, jobs: int = 2,
                    prepare: Callable[[dict, Part], dict] | None = None) -> dict[str, list]:
    """part id -> [(assignment, kind, name, entry, notebook path, result)] for every catalogue entry.

    ``prepare(nb, part)``, when given, changes each notebook before it is graded (the mutation
    check patches numpy there)."""
    tasks, meta = [], []
    for assignment in course.assignments:
        for part in assignment.parts:
            for kind, name, entry in cases(course, assignment, part):
                student = f"{part.id}--{name}"
                nb = cohort.solved(course, assignment, entry["cells"])
                if prepare:
                    nb = prepare(nb, part)
                path = cohort.write(nb, str(folder), student, assignment)
                # the parts it uses that are still the reference's pass, as in a whole grading
                passed = frozenset(used for used in part.uses
                                   if not set(assignment.part(used).cells) & set(entry["cells"]))
                tasks.append((course, assignment.id, part.id, student, path, passed))
                meta.append((assignment, part, kind, name, entry, path))
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        results = list(pool.map(_grade, tasks))
    by_part: dict[str, list] = {}
    for (assignment, part, kind, name, entry, path), result in zip(meta, results):
        by_part.setdefault(part.id, []).append((assignment, kind, name, entry, path, result))
    return by_part


def summary(course: Course, by_part: dict[str, list]) -> dict:
    """docs/mistakes.json: per part, every catalogued mistake, the id it should be diagnosed as, the id
    and words the grader gave, its first line at grading and the first public check that fails."""
    parts = []
    for assignment in course.assignments:
        for part in assignment.parts:
            entries: dict[str, list] = {"mistake": [], "held-out": []}
            for _, kind, name, entry, _, result in by_part.get(part.id, []):
                if kind not in entries:
                    continue
                public = result["public_failing"]
                entries[kind].append({
                    "name": name, "mistake": entry.get("mistake", name), "warned": entry.get("warned"),
                    "score": result["score"], "max_score": result["max_score"], "reason": result["reason"],
                    "diagnosed": result["mistake"], "diagnosis": result["diagnosis"],
                    "public_failing": len(public),
                    "self_check": {"check": public[0].doc, "message": public[0].said} if public else None,
                    **({"source": entry["source"]} if entry.get("source") else {})})   # real code it came from
            parts.append({"part": part.id, "assignment": assignment.id, "points": part.points,
                          "mistakes": entries["mistake"], "held_out": entries["held-out"]})
    return {"parts": parts, "held_out_named": named_share(parts, "held_out"),
            "held_out_named_real_code": named_share(parts, "held_out", real_code=True)}


def names_it(entry: dict) -> bool:
    """The part's first sentence names this mistake: it starts with a diagnosis whose id is the entry's."""
    return entry["reason"].startswith("Likely mistake:") and entry["mistake"] in (entry["diagnosed"] or "").split(" or ")


def named_share(parts: list[dict], key: str, real_code: bool | None = None) -> list[int]:
    """(named, of how many) over the entries under ``key`` of every part; with ``real_code``, only
    those taken from real public code (True: an entry with a source) or written here (False)."""
    entries = [entry for part in parts for entry in part[key]
               if real_code is None or bool(entry.get("source")) == real_code]
    return [sum(1 for entry in entries if names_it(entry)), len(entries)]


def _quote(text):
    return "\n".join("> " + line for line in text.splitlines()) or "> (nothing)"


def page(data: dict) -> str:
    """docs/mistakes.md from docs/mistakes.json: per part, every catalogued mistake and the exact words a
    student gets."""
    lines = ["# What a student sees for each catalogued mistake", "",
             "Generated by `course mistakes` from `parts/<part>/mistakes.py`, graded exactly as `course grade` "
             "grades a hand-in (the other parts run the reference), and rendered from `docs/mistakes.json`, which "
             "holds the same as data; `tests/test_mutants.py` fails when either is out of date or when a "
             "mistake's feedback does not name it. For each mistake: what the notebook says about it, the part's "
             "first line at grading (`parts.csv`, the feedback page, nbgrader's feedback), and the first public "
             "check that fails, which is what `pytest` and the check cell show first.", ""]
    for part in data["parts"]:
        lines += [f"## {part['part']} ({part['assignment']}, {part['points']} points)", ""]
        for entry in part["mistakes"]:
            first = entry["self_check"]
            lines += [f"### `{entry['name']}`", "",
                      f"The notebook: *{entry['warned']}*." if entry["warned"] else
                      "Not a mistake the notebook warns about: only the hidden checks can catch it.", "",
                      f"Grading, {entry['score']:g} of {entry['max_score']:g} points:", "",
                      _quote(entry["reason"]), "",
                      (f"Self-check, first of {entry['public_failing']} failing public checks ({first['check']}):"
                       if first else "Self-check: every public check passes."), ""]
            if first:
                lines += [_quote(first["message"]), ""]
            if entry.get("source"):
                lines += [f"Taken from real code: {entry['source']}.", ""]
    named, total = data["held_out_named"]
    real, of_real = data.get("held_out_named_real_code", [0, 0])
    lines += ["## Held-out mistakes", "",
              f"`parts/<part>/held_out.py` hold {total} mistakes no diagnosis was written from; the first sentence of "
              f"the part's reason names {named} of them (the id the checks recorded is the one each entry gives). "
              f"{of_real} of them were taken from real public code (each names its source), and {real} of those "
              f"are named; of the {total - of_real} written here, {named - real}.", ""]
    for part in data["parts"]:
        for entry in part["held_out"]:
            lines += [f"* `{part['part']}` `{entry['name']}`: {'named' if names_it(entry) else 'not named'} "
                      f"({entry['score']:g} of {entry['max_score']:g}): {entry['reason'][:160]}"
                      + (f" (from {entry['source']})" if entry.get("source") else "")]
    return "\n".join(lines).rstrip() + "\n"


def write(course: Course, data: dict) -> list[str]:
    """Write docs/mistakes.json and the page rendered from it; returns their paths."""
    paths = []
    for name, text in ((DATA, json.dumps(data, indent=1, ensure_ascii=False) + "\n"), (PAGE, page(data))):
        path = os.path.join(course.root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        paths.append(path)
    return paths


def comparable(text: str) -> str:
    """Text with every number blanked: float rounding differs a little between machines, and the
    mutation check grades with a patch at the top of a cell, which moves the line numbers."""
    return re.sub(r"\d+", "#", text)

"""What an export made each hand-in's file from, as a hash: an export after one student's regrade
writes that student's files alone, and a term of thousands is not written again for one change.

A file is made from its record (the version of its results file when the record is as written
there, which is far cheaper to read than its content), its gradebook entry, anything else it
reads, and the code and course.yaml that make it. Each export keeps ``{<student>/<assignment>:
hash}`` in ``.made_from.json`` in its folder; deleting that file only makes every file again.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from autograder.records import store

if TYPE_CHECKING:
    from autograder.course.config import Course
    from autograder.records.results import Submission

NAME = ".made_from.json"      # a dot name: never a student id
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))    # autograder/


def made_by(patterns: tuple[str, ...], course: Course | None) -> str:
    """A hash of the files below autograder/ that ``patterns`` name (globs; the self-check kit's
    words for a failed check are ``../selfcheck/causes.py``), and of course.yaml; a
    pattern that names no file is a file moved without this list (it would stop counting), so it
    raises."""
    files = [course.path] if course is not None else []
    for pattern in patterns:
        found = sorted(f for f in glob.glob(os.path.join(ROOT, pattern)) if os.path.isfile(f))
        if not found:
            raise FileNotFoundError(f"{pattern}: no such file below {ROOT}")
        files += found
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as fh:
            digest.update(fh.read())
    return digest.hexdigest()[:12]


class Kept:
    """The hashes an export's folder kept last time, and those of this export."""

    def __init__(self, folder: str, made_by: str) -> None:
        self.folder, self.made_by = folder, made_by
        self.now: dict[str, str] = {}
        try:
            with open(os.path.join(folder, NAME), encoding="utf-8") as fh:
                self.before: dict[str, str] = json.load(fh)
        except (OSError, ValueError):
            self.before = {}

    def stale(self, out: str, record: Submission, entry: Mapping, path: str, on_disk: bool, *also: Any) -> bool:
        """Whether the file at ``path`` of ``record`` is to be written again; ``entry`` its gradebook
        entry, ``also`` anything else it is made from; ``on_disk``: the record is as its results file
        holds it."""
        name = f"{record.student}/{record.assignment}"
        written = store.version(store.result_path(out, record.student, record.assignment)) if on_disk else None
        made = json.dumps([written or record.to_json(), entry, *also, self.made_by], sort_keys=True, default=str)
        self.now[name] = hashlib.sha256(made.encode()).hexdigest()
        return self.before.get(name) != self.now[name] or not os.path.exists(path)

    def save(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        with store.replacing(os.path.join(self.folder, NAME), encoding="utf-8") as fh:
            json.dump(self.now, fh)

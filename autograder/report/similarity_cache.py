"""Each hand-in's similarity Document, read once and kept in the grading folder.

Reading a hand-in for the comparison (parsing it, choosing the code grading runs, normalising and
fingerprinting it) is most of what the similarity flags cost, and gives the same Document however
often the report is made. Each one is kept as JSON under ``results/.similarity/<assignment>/``,
named by the sha256 of the notebook's bytes, of the released notebook, of the cells course.yaml
grades and of the code that reads it, so a regrade of one student reads one notebook, and a change
to any of them reads every one again. A notebook the comparison leaves out (not this
assignment's) is kept as left out.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os

from autograder.grade import handin, versions
from autograder.records import store
from autograder.report import code_in_strings, similarity
from selfcheck import program

FOLDER = ".similarity"     # in results/: a dot name, never a student id
FILES = ".files.json"      # in each assignment's folder: the version of each hand-in's file read
COMPARED = ".compared.json"   # ... and what the last comparison of them flagged
WAYS = ".known.json"       # ... and which Documents the known ways to write it are
LEFT_OUT = "left out"


@functools.cache
def _readers_version() -> str:
    """The code that turns a notebook into a Document (and this file, which stores it)."""
    return versions.file_hash(similarity.__file__, code_in_strings.__file__, program.__file__, __file__,
                              os.path.join(os.path.dirname(__file__), "cohort_analysis.py"))


class Cache:
    """The Documents of one assignment's hand-ins, under ``out/results/.similarity/<assignment>``."""

    def __init__(self, out: str, assignment: str, release: dict, cells: list[str]) -> None:
        self.folder, self._assignment = os.path.join(out, "results", FOLDER, assignment), assignment
        read = json.dumps([_readers_version(), release, cells], sort_keys=True)    # cells: what course.yaml grades
        self.salt = hashlib.sha256(read.encode()).digest()
        # each hand-in's notebook file -> [its version, its Document's name]: not read again while unchanged
        try:
            with open(os.path.join(self.folder, FILES), encoding="utf-8") as fh:
                self._files: dict[str, list] = json.load(fh)
        except (OSError, ValueError):
            self._files = {}
        self._seen: dict[str, list] = {}
        self._read: dict[str, bytes] = {}     # files read to compare their bytes, which changed

    def read(self, path: str) -> bytes:
        """The notebook at ``path`` as grading reads it (:func:`handin.read_submission`), read once."""
        raw = self._read.pop(path, None)
        return raw if raw is not None else handin.read_submission(path)

    def known(self, path: str, key: tuple) -> similarity.Document | str | None:
        """The Document kept for the notebook file at ``path`` when that file has the version it had
        when it was read (:func:`store.version`): then it is not read again."""
        entry = self._files.get(path)
        if not entry or entry[0] != store.version(path):
            return None
        found = self._named(entry[1], key)
        if found is not None:
            self._seen[path] = entry
        return found

    def seen(self, path: str, raw: bytes | None) -> None:
        """The notebook file at ``path`` was read as ``raw`` (None: it could not be read)."""
        self._seen[path] = [store.version(path), self._name(raw) if raw is not None else None]

    def _ways_key(self, made_from: list[str]) -> str:
        digest = hashlib.sha256(self.salt)     # the code reading them, the release, the cells graded
        for path in made_from:
            with contextlib.suppress(OSError), open(path, "rb") as fh:
                digest.update(hashlib.sha256(fh.read()).digest())
        return digest.hexdigest()

    def known_ways(self, made_from: list[str], assignment: str) -> list[similarity.Document] | None:
        """The Documents of the known ways to write the assignment, as kept when the files they are
        made from (``made_from``) were as they are now; else None."""
        try:
            with open(os.path.join(self.folder, WAYS), encoding="utf-8") as fh:
                kept = json.load(fh)
        except (OSError, ValueError):
            return None
        if not isinstance(kept, dict) or kept.get("key") != self._ways_key(made_from):
            return None
        found = [self._named(name, ("known", assignment)) for name in kept["names"]]
        docs = [doc for doc in found if isinstance(doc, similarity.Document)]
        return docs if len(docs) == len(found) else None

    def keep_ways(self, made_from: list[str], raws: list[bytes]) -> None:
        """Keep which Documents the known ways (``raws``, made from the files ``made_from``) are."""
        with contextlib.suppress(OSError):
            os.makedirs(self.folder, exist_ok=True)
            with store.replacing(os.path.join(self.folder, WAYS), encoding="utf-8") as fh:
                fh.write(json.dumps({"key": self._ways_key(made_from), "names": [self._name(raw) for raw in raws]}))

    def _compared_key(self, paths: dict[str, str], known: list[similarity.Document], threshold: float) -> str | None:
        """What a comparison of the notebooks at ``paths`` ({student: path}) depends on, as a hash:
        each one's Document (by name) while its file is unchanged, the known ways' fingerprints and
        the threshold (the code that compares is in every name); None when a file changed."""
        names = []
        for student, path in sorted(paths.items()):
            entry = self._files.get(path)
            if not entry or entry[0] != store.version(path) and not self._same_bytes(path, entry):
                return None
            names.append([student, entry[1]])
        made = json.dumps([names, [sorted(doc.prints) for doc in known], threshold])
        return hashlib.sha256(made.encode()).hexdigest()

    def _same_bytes(self, path: str, entry: list) -> bool:
        """Whether the file at ``path``, whose version changed (a regrade copies or re-permits a
        hand-in), still holds the bytes its Document was read from; then its version is updated."""
        seen = store.version(path)          # before the read: a file replaced meanwhile is not taken as read
        try:
            raw = handin.read_submission(path)
        except (program.NotebookError, OSError):
            return False
        if entry[1] != self._name(raw):
            self._read[path] = raw          # the comparison reads it next: not from the disk again
            return False
        if store.version(path) != seen:
            return False
        entry[0] = seen
        return True

    def compared(self, paths: dict[str, str], known: list[similarity.Document],
                 threshold: float) -> tuple[list[similarity.Pair], list[similarity.Document]] | None:
        """The pairs the last comparison of the notebooks at ``paths`` flagged, with the Documents
        they hold and those not compared, when nothing it depends on changed since; else None."""
        key = self._compared_key(paths, known, threshold)
        try:
            with open(os.path.join(self.folder, COMPARED), encoding="utf-8") as fh:
                kept = json.load(fh)
        except (OSError, ValueError):
            return None
        if key is None or not isinstance(kept, dict) or kept.get("key") != key:
            return None
        docs: dict[str, similarity.Document] = {}
        for student in {s for pair in kept["pairs"] for s in pair[:2]}:
            found = self._named(self._files[paths[student]][1], (student, self._assignment))
            if not isinstance(found, similarity.Document):
                return None
            docs[student] = found
        self._seen.update((paths[s], self._files[paths[s]]) for s in paths)
        pairs = [similarity.Pair(docs[a], docs[b], shared, score) for a, b, shared, score in kept["pairs"]]
        unread = [similarity.Document((student, self._assignment), unread=why) for student, why in kept["unread"]]
        return pairs, list(docs.values()) + unread

    def keep_compared(self, paths: dict[str, str], known: list[similarity.Document], threshold: float,
                      pairs: list[similarity.Pair], docs: list[similarity.Document]) -> None:
        """Keep what the comparison of the notebooks at ``paths`` found, for :meth:`compared`."""
        self._files = self._seen
        key = self._compared_key(paths, known, threshold)
        if key is None:
            return
        kept = {"key": key, "pairs": [[p.a.key[0], p.b.key[0], p.shared, p.score] for p in pairs],
                "unread": [[doc.key[0], doc.unread] for doc in docs if doc.unread]}
        with contextlib.suppress(OSError):
            with store.replacing(os.path.join(self.folder, COMPARED), encoding="utf-8") as fh:
                fh.write(json.dumps(kept))

    def save(self) -> None:
        """Keep the versions of the files seen this time (a cache that cannot be written is no cache)."""
        if self._seen != self._files:
            with contextlib.suppress(OSError):
                os.makedirs(self.folder, exist_ok=True)
                with store.replacing(os.path.join(self.folder, FILES), encoding="utf-8") as fh:
                    json.dump(self._seen, fh, separators=(",", ":"))

    def _name(self, raw: bytes) -> str:
        return hashlib.sha256(self.salt + raw).hexdigest()[:40] + ".json"

    def _path(self, raw: bytes) -> str:
        return os.path.join(self.folder, self._name(raw))

    def get(self, raw: bytes, key: tuple) -> similarity.Document | str | None:
        """The Document kept for the notebook ``raw``, under ``key``; LEFT_OUT; or None when none is kept."""
        return self._named(self._name(raw), key)

    def _named(self, name: str, key: tuple) -> similarity.Document | str | None:
        try:
            with open(os.path.join(self.folder, name), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        if data == LEFT_OUT:
            return LEFT_OUT
        try:
            return similarity.Document(key, lines={(c, n): line for c, n, line in data["lines"]},
                                       origins=[(c, n) for c, n, run in data["origins"] for _ in range(run)],
                                       prints={h: i for h, i in data["prints"]}, unread=data["unread"])
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, raw: bytes, doc: similarity.Document | str) -> None:
        """Keep ``doc`` (or LEFT_OUT) for the notebook ``raw``; a cache that cannot be written is no cache."""
        data = doc if isinstance(doc, str) else {
            "lines": [[c, n, line] for (c, n), line in doc.lines.items()], "origins": _runs(doc.origins),
            "prints": list(doc.prints.items()), "unread": doc.unread}
        with contextlib.suppress(OSError):
            os.makedirs(self.folder, exist_ok=True)
            with store.replacing(self._path(raw), encoding="utf-8") as fh:
                fh.write(json.dumps(data, separators=(",", ":")))     # the C encoder: json.dump is not it


def _runs(origins: list[tuple[str, int]]) -> list[list]:
    """Each token's (cell, line) as runs [cell, line, tokens]: a line's tokens share one origin."""
    runs: list[list] = []
    for cell, line in origins:
        if runs and runs[-1][0] == cell and runs[-1][1] == line:
            runs[-1][2] += 1
        else:
            runs.append([cell, line, 1])
    return runs

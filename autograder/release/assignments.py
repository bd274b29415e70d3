"""Release: solutions/ -> assignments/ through nbgrader, plus the self-check kit.

``nbgrader generate_assignment`` strips the solutions and copies the public
tests; then each released folder gets the self-check kit (:mod:`autograder.nbgrader.selfcheck_kit`),
so ``pytest`` works there with nothing else installed but numpy and pytest. Points are written into the
solution notebooks from course.yaml first, so course.yaml stays the only
place they are set (nbgrader reads them from ``solutions/``, its source
directory, so ``course release`` rewrites those notebooks and says so).

The whole release is built aside, checked for leaks and put in the course's gradebook
first; only a release that leaks nothing and that nbgrader took replaces ``assignments/``
and ``solutions/``, one folder at a time by renames, so a refused release writes nothing.
"""

import filecmp
import os
import re
import shutil
import tempfile

from autograder.course.config import Assignment, ConfigError, Course
from autograder.nbgrader import selfcheck_kit
from selfcheck.program import is_solution, read_notebook, source

MARKERS = re.compile(r"BEGIN SOLUTION|END SOLUTION|BEGIN HIDDEN TESTS|END HIDDEN TESTS")


def _points(assignment):
    """grade id -> the points course.yaml gives it."""
    wanted = {p.check_cell: p.points for p in assignment.parts}
    wanted.update(assignment.written)
    return wanted


def _unsynced(assignment, nb):
    """(grade cell metadata, points wanted) for every grade cell whose points are not course.yaml's."""
    wanted = _points(assignment)
    return [(cell.metadata["nbgrader"], wanted[cell.metadata["nbgrader"]["grade_id"]]) for cell in nb.cells
            if cell.metadata.get("nbgrader", {}).get("grade")
            and cell.metadata["nbgrader"].get("grade_id") in wanted
            and cell.metadata["nbgrader"].get("points") != wanted[cell.metadata["nbgrader"]["grade_id"]]]


def sync_points(course: Course, assignment: Assignment, path: str) -> list[str]:
    """Write course.yaml's points into the grade cells of a solution notebook at ``path``.

    Returns what changed, e.g. ``["check_softmax 4 -> 5"]``."""
    import nbformat      # here, like nbgrader below: importing them takes seconds
    nb = nbformat.read(path, as_version=4)
    changed = []
    for meta, points in _unsynced(assignment, nb):
        changed.append(f"{meta['grade_id']} {meta.get('points')} -> {points}")
        meta["points"] = points
    if changed:
        nbformat.write(nb, path)
    return changed


def require_released_points(course: Course) -> None:
    """Raise ConfigError naming every grade cell of ``solutions/`` whose points course.yaml has
    changed since the last release: nbgrader's gradebook takes its points from there, so it
    would keep the old points while parts.csv took the new."""
    import nbformat
    found = []
    for assignment in course.assignments:
        nb = nbformat.read(course.source(assignment, assignment.notebook), as_version=4)
        found += [f"{assignment.id}/{meta['grade_id']}: {meta.get('points')} in solutions/, {points} in course.yaml"
                  for meta, points in _unsynced(assignment, nb)]
    if found:
        raise ConfigError(f"points changed in course.yaml but not released ({'; '.join(found)}): "
                          "run `course release` first")


class LeakError(Exception):
    """The release would publish solution or hidden-test text; nothing was written."""

    def __init__(self, leaks: list[tuple[str, str]]) -> None:
        super().__init__(f"{len(leaks)} leak(s)")
        self.leaks = leaks


def build(course: Course, folder: str) -> tuple[str, dict[str, list[str]]]:
    """The whole release, made inside ``folder`` and nowhere else.

    nbgrader generates it (its gradebook in ``folder`` too) from a copy of
    ``solutions/`` with course.yaml's points written in; each assignment then
    gets the self-check kit. Returns ``(release folder, {assignment id: points
    changed in its solution notebook})``; the synced copies are in ``folder/solutions``.
    """
    from autograder.nbgrader import apps      # nbgrader loads in seconds: only when releasing
    source_dir, target = os.path.join(folder, "solutions"), os.path.join(folder, "release")
    synced = {}
    for assignment in course.assignments:
        shutil.copytree(course.source(assignment), os.path.join(source_dir, assignment.id),
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        changed = sync_points(course, assignment, os.path.join(source_dir, assignment.id, assignment.notebook))
        if changed:
            synced[assignment.id] = changed
        apps.generate(course, assignment, release_dir=target, out=folder, source_dir=source_dir)
        selfcheck_kit.vendor(course, assignment, os.path.join(target, assignment.id))
    return target, synced


def release(course: Course) -> dict[str, list[str]]:
    """Release every assignment into ``assignments/``, or raise :class:`LeakError` (a leak) or
    :class:`~autograder.errors.NbgraderError` (nbgrader refused the course's gradebook) having
    written nothing in ``assignments/`` or ``solutions/``.

    Returns ``{assignment id: points changed}`` for the solution notebooks it rewrote.
    """
    from autograder.nbgrader import apps
    with tempfile.TemporaryDirectory(prefix=".release-", dir=course.root) as tmp:
        built, synced = build(course, tmp)
        found = leaks(course, built)
        if found:
            raise LeakError(found)
        for assignment in course.assignments:      # the course's gradebook first: nbgrader may refuse
            with tempfile.TemporaryDirectory(dir=tmp) as scratch:      # (cells added once hand-ins exist)
                apps.generate(course, assignment, release_dir=scratch, out=course.root,
                              source_dir=os.path.join(tmp, "solutions"))
        for assignment in course.assignments:
            if assignment.id in synced:
                os.replace(os.path.join(tmp, "solutions", assignment.id, assignment.notebook),
                           course.source(assignment, assignment.notebook))
            target = course.release(assignment)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.exists(target):
                os.rename(target, os.path.join(tmp, f"replaced-{assignment.id}"))
            os.rename(os.path.join(built, assignment.id), target)
    return synced


def differences(course: Course) -> list[str]:
    """Files where the committed release differs from a fresh one (empty when in sync)."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh, _ = build(course, tmp)
        committed = os.path.join(course.root, "assignments")
        diffs = []

        def walk(cmp, prefix=""):
            for name in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files:
                if name != "__pycache__":
                    diffs.append(os.path.join(prefix, name))
            for name, sub in cmp.subdirs.items():
                if name != "__pycache__":
                    walk(sub, os.path.join(prefix, name))

        walk(filecmp.dircmp(fresh, committed, ignore=["__pycache__", ".ipynb_checkpoints"]))
        return sorted(diffs)


def _solution_lines(course, assignment):
    """Distinctive lines of the reference solution that the release must never contain.

    A solution cell's lines between its markers (all of it when it has none, as
    a written answer's model answer), less every line the notebook gives
    students anyway: its other cells and the given lines of solution cells."""
    secret: set[str] = set()
    given: set[str] = set()
    for cell in read_notebook(course.source(assignment, assignment.notebook))["cells"]:
        text = source(cell)
        if not is_solution(cell):
            given |= {line.strip() for line in text.splitlines()}
            continue
        inside = "BEGIN SOLUTION" not in text
        for line in text.splitlines():
            if "BEGIN SOLUTION" in line:
                inside = True
            elif "END SOLUTION" in line:
                inside = False
            else:
                (secret if inside else given).add(line.strip())
    return {line for line in secret - given if len(line) >= 25}


def _hidden_lines(course):
    """Distinctive lines of the hidden suites that no public suite has too (those are released anyway)."""
    lines, public = set(), ""
    for assignment in course.assignments:
        for part in assignment.parts:
            with open(os.path.join(course.root, part.hidden)) as fh:
                lines |= {l.strip() for l in fh if len(l.strip()) >= 30 and not l.strip().startswith(("#", "import", "from", '"""'))}
            with open(os.path.join(course.root, part.public)) as fh:
                public += fh.read()
    return {line for line in lines if line not in public}


def leaks(course: Course, folder: str | None = None) -> list[tuple[str, str]]:
    """(file, what leaked) for every released file holding solution or hidden-test text."""
    folder = folder or os.path.join(course.root, "assignments")
    hidden = _hidden_lines(course)
    found = []
    for assignment in course.assignments:
        solution = _solution_lines(course, assignment)
        for dirpath, _, files in os.walk(os.path.join(folder, assignment.id)):
            for name in files:
                path = os.path.join(dirpath, name)
                try:
                    text = open(path, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue
                rel = os.path.relpath(path, folder)
                if MARKERS.search(text):
                    found.append((rel, "a solution or hidden-test marker"))
                for line in sorted(solution | hidden):
                    if line in text:
                        kind = "solution code" if line in solution else "hidden test text"
                        found.append((rel, f"{kind}: {line[:60]}"))
    return found

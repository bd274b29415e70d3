"""The catalogue of mistakes as text (parts/<part>/mistakes.py and held_out.py), before anything is graded.

Fast: the entries are read, not graded (tests/test_mutants.py grades them).
"""

import re

from autograder.mistakes import cohort
from selfcheck.program import grade_id, read_notebook, source

REGION = re.compile(r"^[ \t]*### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION$", re.S | re.M)


def test_an_entry_that_writes_a_cell_around_given_code_keeps_that_code_as_the_reference_has_it(course):
    """A cell whose solution regions sit inside given code (the weighted-attention layer: the class, its
    docstring, the projections created, the comments over regions (a) and (b)) is written by every
    catalogue entry with that code word for word: what it says a student reads in the notebook."""
    checked = 0
    for assignment in course.assignments:
        reference = read_notebook(course.source(assignment, assignment.notebook))
        for cell in reference["cells"]:
            text = source(cell)
            regions = REGION.findall(text)
            if len(regions) < 2:        # a function stub: the entries write the whole function
                continue
            given = [piece.strip("\n") for piece in REGION.split(text) if piece.strip()]
            for part in assignment.parts:
                if grade_id(cell) not in part.cells:
                    continue
                mistakes, correct = cohort.catalogue(course, part.id)
                held_out, _ = cohort.catalogue(course, part.id, held_out=True)
                entries = {**mistakes, **held_out, **{name: {"cells": cells} for name, cells in correct.items()}}
                for name, entry in entries.items():
                    written = entry["cells"].get(grade_id(cell))
                    if written is None:
                        continue
                    at = 0
                    for piece in given:
                        found = written.find(piece, at)
                        assert found >= 0, f"{part.id}: {name} does not keep the given code\n{piece}"
                        at = found + len(piece)
                    checked += 1
    assert checked >= 20

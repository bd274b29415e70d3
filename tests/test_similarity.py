"""Similarity flags (autograder/similarity.py): near-copies are flagged, independent solutions are not.

Fast: notebooks are built in memory and never graded.
"""

import ast
import io
import time
import tokenize

import numpy as np

from autograder import cohort, similarity
from selfcheck.program import grade_id, read_notebook



def disguised(code, theirs):
    """``code`` as a copier hides it: every name in ``theirs`` renamed, comments reworded."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        text = tok.string
        after_dot = out and out[-1][1] == "."
        if tok.type == tokenize.NAME and text in theirs and not after_dot:
            text = "my_" + text[::-1]
        elif tok.type == tokenize.COMMENT:
            text = "# see lecture 3"
        out.append((tok.type, text))
    return tokenize.untokenize(out)


def _near_copy(cells):
    """The variables renamed (not the parameters: the checks call by keyword), comments changed,
    the functions in the opposite order."""
    theirs = set()
    for code in cells.values():
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                theirs.add(node.id)
    return {name: "# my own work\n" + disguised(code, theirs) for name, code in reversed(list(cells.items()))}


def _reference_cells(course, assignment):
    nb = cohort.solved(course, assignment)
    return {grade_id(c): c["source"] for c in nb["cells"] if grade_id(c) in similarity.notebook_cells(nb)}


def test_winnowing_keeps_a_fingerprint_of_every_long_enough_shared_passage():
    rng = np.random.default_rng(0)
    hashes = [int(h) for h in rng.integers(0, 2**32, size=200)]
    kept = similarity.winnow(hashes)
    for start in range(len(hashes) - similarity.WINDOW + 1):
        assert set(hashes[start:start + similarity.WINDOW]) & set(kept)
    assert len(kept) < len(hashes) / 2


def test_renaming_reordering_and_comments_change_no_fingerprint(course):
    cells = _reference_cells(course, course.assignment("tiny_transformer"))
    original = similarity.document(("a", "x"), cells)
    copied = similarity.document(("b", "x"), _near_copy(cells))
    assert original.prints.keys() == copied.prints.keys()


def test_planted_near_copies_are_flagged_and_the_rest_of_the_cohort_is_not(course):
    """A cohort of the reference, every catalogued mistake and every correct variant (each the
    reference with some cells of its own): the two near-copies of one distinctive solution are
    the only pair flagged."""
    docs = []
    for assignment in course.assignments:
        given = similarity.given_lines(read_notebook(course.release(assignment, assignment.notebook)))
        found = [("reference", cohort.solved(course, assignment))]
        for part in assignment.parts:
            mistakes, correct = cohort.catalogue(course, part.id)
            found += [(name, cohort.solved(course, assignment, e["cells"])) for name, e in mistakes.items()]
            found += [(f"{part.id}-{name}", cohort.solved(course, assignment, e.get("cells", e)))
                      for name, e in correct.items()]
        docs = [similarity.document((name, assignment.id), similarity.notebook_cells(nb), given)
                for name, nb in found]
        if assignment.id == "attention":
            loops = next(nb for name, nb in found if name == "softmax-loops")
            cells = similarity.notebook_cells(loops)
            docs.append(similarity.document(("copier", assignment.id), _near_copy(cells), given))
        pairs = similarity.compare(docs, course.similarity_threshold)
        flagged = {tuple(sorted((p.a.key[0], p.b.key[0]))) for p in pairs}
        assert flagged == ({("copier", "softmax-loops")} if assignment.id == "attention" else set()), \
            (assignment.id, [(p.a.key[0], p.b.key[0], p.score) for p in pairs])


def test_independently_written_correct_solutions_are_not_flagged(course):
    """Every correct variant of a cell against the reference and the other variants: short code
    that says the same thing must not look copied."""
    checked = 0
    for assignment in course.assignments:
        given = similarity.given_lines(read_notebook(course.release(assignment, assignment.notebook)))
        reference = _reference_cells(course, assignment)
        for part in assignment.parts:
            _, correct = cohort.catalogue(course, part.id)
            for cell in part.cells:
                versions = [("reference", reference[cell])]
                versions += [(name, e.get("cells", e)[cell]) for name, e in correct.items()
                             if cell in e.get("cells", e)]
                if len(versions) < 2:
                    continue
                docs = [similarity.document((name, cell), {cell: code}, given) for name, code in versions]
                pairs = similarity.compare(docs, course.similarity_threshold)
                assert not pairs, [(p.a.key, p.b.key, p.score) for p in pairs]
                checked += 1
    assert checked >= 5


def test_the_side_by_side_view_marks_the_lines_that_match(course):
    cells = _reference_cells(course, course.assignment("tiny_transformer"))
    a = similarity.document(("a", "x"), cells)
    b = similarity.document(("b", "x"), _near_copy(cells))
    pair = similarity.compare([a, b])[0]
    assert pair.score == 1.0
    in_a, in_b = pair.matching_lines()
    assert {cell for cell, _ in in_a} == set(cells) == {cell for cell, _ in in_b}
    assert all(b.lines[key].strip() != "# my own work" for key in in_b)


def test_three_hundred_submissions_compare_in_seconds(course):
    """300 hand-ins drawn from the catalogue (so passages are shared by a few, by many, by all),
    fingerprinted and compared through the index."""
    assignment = course.assignment("tiny_transformer")
    given = similarity.given_lines(read_notebook(course.release(assignment, assignment.notebook)))
    pool = [cohort.solved(course, assignment)]
    for part in assignment.parts:
        mistakes, correct = cohort.catalogue(course, part.id)
        pool += [cohort.solved(course, assignment, e.get("cells", e)) for e in [*mistakes.values(), *correct.values()]]
    cells = [similarity.notebook_cells(nb) for nb in pool]
    started = time.monotonic()
    docs = [similarity.document((f"s{i:03d}", assignment.id), cells[i % len(cells)], given) for i in range(300)]
    similarity.compare(docs, course.similarity_threshold)
    assert time.monotonic() - started < 30      # about 5 s on one idle core


def test_a_padded_or_deeply_nested_hand_in_costs_the_comparison_no_time_and_no_crash():
    """A cell of 25,000 statements, or of code nested past the parser's depth, is read in
    a moment and never stops the report (both were hours, or a crash, for the whole cohort)."""
    started = time.process_time()
    padded = similarity.document(("padded", "a"), {"softmax": "def softmax(z):\n    return z\n" + "_a = 1\n" * 25000})
    deep = similarity.document(("deep", "a"), {"softmax": "x = a" + ".b" * 200000})
    assert padded.prints and deep.key == ("deep", "a")
    assert time.process_time() - started < 20

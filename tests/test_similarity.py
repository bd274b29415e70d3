"""Similarity flags (autograder/report/similarity.py): near-copies are flagged wherever grading finds the
code, alone or in groups; independent solutions and the known ways to write them are not.

Fast: notebooks are built in memory or written to a temporary folder, and never graded.
"""

import ast
import base64
import copy
import dataclasses
import io
import time
import tokenize

import numpy as np
import pytest

from autograder.mistakes import cohort
from autograder.records.results import Submission
from autograder.report import code_size, cohort_analysis, similarity, similarity_cache
from selfcheck.program import grade_id, read_notebook, source

# A correct solution of the attention assignment's first part that neither the reference nor
# the catalogue of correct variants writes this way: copying it is what a flag is for.
DISTINCTIVE = {
    "softmax": '''
def softmax(z, axis=-1):
    values = np.swapaxes(np.array(z, dtype=float), axis, -1)
    peak = np.max(values, axis=-1, keepdims=True)
    peak[~np.isfinite(peak)] = 0.0
    powers = np.exp(values - peak)
    normalised = powers / np.sum(powers, axis=-1, keepdims=True)
    return np.swapaxes(normalised, -1, axis)
''',
    "entropy_bits": '''
def entropy_bits(p):
    flat = np.ravel(np.asarray(p, dtype=float))
    positive = flat[flat > 0]
    return float(np.dot(positive, np.log(1.0 / positive)) / np.log(2.0))
''',
    "attend": '''
def attend(q, K, V):
    query = np.ravel(np.asarray(q, dtype=float))
    keys = np.asarray(K, dtype=float).reshape(-1, query.size)
    scale = 1.0 / np.sqrt(float(query.size))
    alpha = softmax(np.dot(keys, query) * scale)
    output = np.tensordot(alpha, np.asarray(V, dtype=float), axes=1)
    return alpha, output
''',
}


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


def hiding_places(course, assignment, cells):
    """{name: notebook} handing in ``cells`` (grade id -> code) where a comparison of the cells
    marked as solutions, read from the last cell of each grade id and cut at 100,000 characters,
    or of their text rather than the code they run (a string given to exec, encoded or cut into
    pieces), did not see them; grading runs the code of every one."""
    stubs = {grade_id(c): source(c) for c in cohort.stub(course, assignment)["cells"] if grade_id(c) in cells}

    def after_each(nb, extra):
        nb["cells"] = [new for cell in nb["cells"]
                       for new in ([cell, extra(cell)] if grade_id(cell) in cells else [cell])]
        return nb

    added = after_each(cohort.solved(course, assignment, stubs), lambda cell: {
        "cell_type": "code", "metadata": {}, "source": cells[grade_id(cell)], "outputs": [], "execution_count": None})
    unflagged = cohort.solved(course, assignment, cells)
    for cell in unflagged["cells"]:
        if grade_id(cell) in cells:
            cell["metadata"]["nbgrader"]["solution"] = False
    padded = cohort.solved(course, assignment, {g: "# " + "x" * 100_000 + "\n" + code for g, code in cells.items()})
    twice = after_each(cohort.solved(course, assignment, cells),
                       lambda cell: {**copy.deepcopy(cell), "source": stubs[grade_id(cell)]})
    in_string = cohort.solved(course, assignment, {g: f"exec({code!r})\n" for g, code in cells.items()})
    encoded = cohort.solved(course, assignment, {
        g: f"import base64\nexec(base64.b64decode({base64.b64encode(code.encode())!r}).decode())\n"
        for g, code in cells.items()})
    joined = cohort.solved(course, assignment, {
        g: "exec(" + " + ".join(repr(code[i:i + 7]) for i in range(0, len(code), 7)) + ")\n"
        for g, code in cells.items()})
    return {"in-added-cells": added, "solution-flag-off": unflagged, "long-leading-comment": padded,
            "stub-under-same-id": twice, "in-an-exec-string": in_string, "in-base64-for-exec": encoded,
            "in-joined-strings-for-exec": joined}


def _release(course, assignment):
    return read_notebook(course.release(assignment, assignment.notebook))


def _reader(course, assignment):
    """A function (student, notebook) -> the Document the cohort report makes of that hand-in."""
    read = cohort_analysis.reader(assignment, _release(course, assignment))
    return lambda student, nb: read((student, assignment.id), nb)


def _reference_cells(course, assignment):
    return similarity.graded_code(cohort.solved(course, assignment), _release(course, assignment),
                                  [cell for part in assignment.parts for cell in part.cells])


def _catalogued(course, assignment):
    """(name, notebook) of the reference, every catalogued mistake and every correct variant."""
    found = [("reference", cohort.solved(course, assignment))]
    for part in assignment.parts:
        mistakes, correct = cohort.catalogue(course, part.id)
        found += [(name, cohort.solved(course, assignment, e["cells"])) for name, e in mistakes.items()]
        found += [(f"{part.id}-{name}", cohort.solved(course, assignment, cells)) for name, cells in correct.items()]
    return found


def _report(course, folder, hand_ins, assignment):
    """The similarity rows of the cohort report of ``hand_ins`` ({student: notebook})."""
    submitted = folder / "submitted"
    for student, nb in hand_ins.items():
        cohort.write(nb, str(submitted), student, assignment)
    records = [Submission(student, assignment.id, assignment.notebook) for student in hand_ins]
    report = cohort_analysis.analyse(course, records, str(submitted))
    return {section: {r["item"] for r in report.section(section)}
            for section in ("similarity", "similarity group", "not compared")}


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
    assert original.prints and original.prints.keys() == copied.prints.keys()


@pytest.mark.slow
def test_a_copy_is_flagged_wherever_grading_finds_it(course, tmp_path):
    """The copy hidden where only grading looked (in a cell added after each solution cell, with
    the solution flag off, after a 100,000-character comment, with the stub again under the same
    grade id after it), in a class of the reference, the catalogued mistakes and the correct
    variants: each is flagged with the original, and nothing else is."""
    assignment = course.assignment("attention")
    hand_ins = dict(_catalogued(course, assignment))
    hand_ins["original"] = cohort.solved(course, assignment, DISTINCTIVE)
    hidden = hiding_places(course, assignment, _near_copy(DISTINCTIVE))
    hand_ins.update(hidden)
    copies = sorted(["original", *hidden])
    found = _report(course, tmp_path, hand_ins, assignment)
    assert found["similarity"] == {f"{a} & {b}" for i, a in enumerate(copies) for b in copies[i + 1:]}
    assert found["similarity group"] == {" & ".join(copies)}


@pytest.mark.slow
def test_three_students_sharing_one_copy_are_flagged_as_one_group(course, tmp_path):
    """Three hand-ins of one copy among honest work are a group, however small the class."""
    assignment = course.assignment("attention")
    hand_ins = dict(_catalogued(course, assignment)[:7])
    hand_ins["anna"] = cohort.solved(course, assignment, DISTINCTIVE)
    hand_ins["ben"] = cohort.solved(course, assignment, _near_copy(DISTINCTIVE))
    hand_ins["chloe"] = hiding_places(course, assignment, DISTINCTIVE)["in-added-cells"]
    found = _report(course, tmp_path, hand_ins, assignment)
    assert found["similarity group"] == {"anna & ben & chloe"}
    assert found["similarity"] == {"anna & ben", "anna & chloe", "ben & chloe"}


@pytest.mark.slow
def test_each_hand_in_is_read_once_for_the_comparison_and_again_once_it_changes(course, tmp_path, monkeypatch):
    """The cohort report keeps each hand-in's fingerprints in the grading folder: made again, it
    reads no notebook and flags the same copy; a changed notebook is read again, and it alone."""
    assignment = course.assignment("attention")
    hand_ins = dict(_catalogued(course, assignment)[:5])
    hand_ins["anna"] = cohort.solved(course, assignment, DISTINCTIVE)
    hand_ins["ben"] = cohort.solved(course, assignment, _near_copy(DISTINCTIVE))
    submitted = tmp_path / "submitted"
    for student, nb in hand_ins.items():
        cohort.write(nb, str(submitted), student, assignment)
    read, real = [], cohort_analysis._document
    monkeypatch.setattr(cohort_analysis, "_document", lambda how, key, *rest: read.append(key[0]) or real(how, key, *rest))

    def flagged():
        groups, _ = cohort_analysis.similar_groups(course, assignment, sorted(hand_ins), str(submitted), str(tmp_path))
        return [[student for student, _ in group.members] for group in groups]
    assert flagged() == [["anna", "ben"]] and sorted(read) == sorted(hand_ins)
    read.clear()
    assert flagged() == [["anna", "ben"]] and read == []
    cohort.write(_catalogued(course, assignment)[6][1], str(submitted), "ben", assignment)   # ben's own work now
    assert flagged() == [] and read == ["ben"]


@pytest.mark.slow
def test_what_a_large_share_of_the_class_or_the_known_solutions_hold_is_no_evidence(course):
    """A copy held by a tenth of a large class is the obvious way to write it; one held by ten
    is not; two hand-ins of a catalogued correct variant wrote it a known way."""
    assignment = course.assignment("attention")
    release = _release(course, assignment)
    known = cohort_analysis.known_documents(course, assignment, release)
    read = _reader(course, assignment)
    others = [read(name, nb) for name, nb in _catalogued(course, assignment)]
    mine = read("copy", cohort.solved(course, assignment, DISTINCTIVE))

    def copies_flagged(copies):
        docs = [dataclasses.replace(mine, key=(f"copy{i}", assignment.id)) for i in range(copies)]
        docs += [dataclasses.replace(others[i % len(others)], key=(f"other{i}", assignment.id))
                 for i in range(300 - copies)]
        pairs = similarity.compare(docs, course.similarity_threshold, known)
        return [p for p in pairs if p.a.key[0].startswith("copy") and p.b.key[0].startswith("copy")]

    assert len(copies_flagged(10)) == 45          # ten of three hundred: every pair of them
    assert copies_flagged(30) == []               # a tenth of the class
    loops = cohort.catalogue(course, "softmax")[1]["loops"]
    twins = [read(name, cohort.solved(course, assignment, loops)) for name in "ab"]
    assert similarity.compare(twins, course.similarity_threshold, known) == []
    assert len(similarity.compare(twins, course.similarity_threshold)) == 1     # alike indeed, but known


@pytest.mark.slow
def test_in_the_whole_catalogue_only_the_planted_copy_is_flagged(course):
    """A cohort of the reference, every catalogued mistake and every correct variant (each the
    reference with some cells of its own) and one distinctive solution with its near-copy: that
    pair is the only one flagged."""
    for assignment in course.assignments:
        release = _release(course, assignment)
        found = _catalogued(course, assignment)
        if assignment.id == "attention":
            found += [("original", cohort.solved(course, assignment, DISTINCTIVE)),
                      ("copier", cohort.solved(course, assignment, _near_copy(DISTINCTIVE)))]
        read = _reader(course, assignment)
        docs = [read(name, nb) for name, nb in found]
        pairs = similarity.compare(docs, course.similarity_threshold,
                                   cohort_analysis.known_documents(course, assignment, release))
        flagged = {tuple(sorted((p.a.key[0], p.b.key[0]))) for p in pairs}
        assert flagged == ({("copier", "original")} if assignment.id == "attention" else set()), \
            (assignment.id, [(p.a.key[0], p.b.key[0], p.score) for p in pairs])


# Two students of one small class who wrote the attention notebook each their own way, neither as
# the reference or the catalogue does: one in the chapter's own idiom (the textbook softmax, np.tril,
# np.where before the softmax, the experiment as loops), one vectorised in float32.
CHAPTER_IDIOM = {
    "softmax": """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""",
    "entropy_bits": """
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())
""",
    "attend": """
def attend(q, K, V):
    q, K, V = np.asarray(q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    d = q.shape[0]
    raw = K @ q
    scaled = raw / math.sqrt(d)
    alpha = softmax(scaled)
    return alpha, alpha @ V
""",
    "causal_mask": """
def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))
""",
    "masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    return softmax(np.where(mask, scores, -np.inf), axis=-1)
""",
    "softmax_then_mask": """
def softmax_then_mask(scores, mask):
    wrong = softmax(np.asarray(scores, dtype=float), axis=-1) * mask
    return wrong, wrong.sum(axis=-1)
""",
    "scale_experiment": """
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        sd, e_raw, e_scaled, top = [], [], [], []
        for _ in range(trials):
            q = rng.normal(0, 1, d)
            K = rng.normal(0, 1, (n_keys, d))
            s = K @ q
            sd.append(s.std())
            a_raw = softmax(s)
            e_raw.append(entropy_bits(a_raw))
            e_scaled.append(entropy_bits(softmax(s / math.sqrt(d))))
            top.append(a_raw.max())
        out["d_k"].append(d)
        out["sd"].append(np.mean(sd))
        out["entropy_raw"].append(np.mean(e_raw))
        out["entropy_scaled"].append(np.mean(e_scaled))
        out["max_alpha_raw"].append(np.mean(top))
    return {k: np.array(v) for k, v in out.items()}
""",
}
VECTORISED_FLOAT32 = {
    "softmax": """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=np.float32)
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
""",
    "entropy_bits": """
def entropy_bits(p):
    p = np.asarray(p, dtype=np.float32).ravel()
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())
""",
    "attend": """
def attend(q, K, V):
    q = np.asarray(q, dtype=np.float32)
    K = np.asarray(K, dtype=np.float32)
    V = np.asarray(V, dtype=np.float32)
    alpha = softmax(K @ q / np.sqrt(np.float32(q.shape[0])))
    return alpha, alpha @ V
""",
    "causal_mask": """
def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))
""",
    "masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=np.float32)
    return softmax(np.where(mask, scores, -np.inf), axis=-1)
""",
    "softmax_then_mask": """
def softmax_then_mask(scores, mask):
    weights = softmax(np.asarray(scores, dtype=np.float32), axis=-1) * mask
    return weights, weights.sum(axis=-1)
""",
    "scale_experiment": """
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        q = rng.normal(0, 1, (trials, d)).astype(np.float32)
        K = rng.normal(0, 1, (trials, n_keys, d)).astype(np.float32)
        s = np.einsum("tkd,td->tk", K, q)
        a_raw = softmax(s)
        a_sc = softmax(s / np.sqrt(d))
        out["d_k"].append(d)
        out["sd"].append(s.std(axis=-1).mean())
        out["entropy_raw"].append(np.mean([entropy_bits(a) for a in a_raw]))
        out["entropy_scaled"].append(np.mean([entropy_bits(a) for a in a_sc]))
        out["max_alpha_raw"].append(a_raw.max(axis=-1).mean())
    return {k: np.array(v) for k, v in out.items()}
""",
}


def test_a_small_class_writing_the_textbook_way_is_not_flagged_but_a_copy_is(course, tmp_path, monkeypatch):
    """A class of seven, with nothing known but the reference (a course whose part has no catalogue
    yet): the chapter's idiom and a float32 version vectorised as the experiment invites are not
    paired with each other nor with the correct ways the catalogue would list, though they share
    the textbook softmax and np.tril; a renamed, reordered copy of one of them is flagged."""
    assignment = course.assignment("attention")
    variants = {f"{part}-{name}": cohort.catalogue(course, part)[1][name]
                for part, name in (("softmax", "float32-throughout"), ("causal_mask", "float32-throughout"),
                                   ("softmax", "loops"))}
    hand_ins = {name: cohort.solved(course, assignment, cells) for name, cells in {
        "reference": {}, "chapter": CHAPTER_IDIOM, "float32": VECTORISED_FLOAT32,
        "copier": _near_copy(VECTORISED_FLOAT32), **variants}.items()}
    monkeypatch.setattr(cohort, "catalogue", lambda *args, **kwargs: ({}, {}))
    found = _report(course, tmp_path, hand_ins, assignment)
    assert found["similarity"] == {"copier & float32"}, found


def test_independently_written_correct_solutions_are_not_flagged(course):
    """Every correct variant of a cell against the reference and the other variants, only the
    reference known: short code that says the same thing must not look copied."""
    checked = 0
    for assignment in course.assignments:
        given = similarity.given_lines(_release(course, assignment))
        reference = _reference_cells(course, assignment)
        for part in assignment.parts:
            _, correct = cohort.catalogue(course, part.id)
            for cell in part.cells:
                versions = [("reference", reference[cell])]
                versions += [(name, cells[cell]) for name, cells in correct.items() if cell in cells]
                if len(versions) < 2:
                    continue
                docs = [similarity.document((name, cell), {cell: code}, given) for name, code in versions]
                pairs = similarity.compare(docs, course.similarity_threshold, known=docs[:1])
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
    assert all("my own work" not in b.lines[key] for key in in_b)
    assert any("my_" in b.lines[key] for key in in_b)          # the student's own names, as handed in


@pytest.mark.slow
def test_three_hundred_submissions_compare_in_seconds(course):
    """300 hand-ins drawn from the catalogue, nothing known (so passages are shared by a few, by
    many, by all), fingerprinted and compared through the index."""
    assignment = course.assignment("tiny_transformer")
    pool = [nb for _, nb in _catalogued(course, assignment)]
    started = time.monotonic()
    read = _reader(course, assignment)
    docs = [read(f"s{i:03d}", pool[i % len(pool)]) for i in range(300)]
    assert similarity.compare(docs, course.similarity_threshold)       # alike in tens: flagged
    assert time.monotonic() - started < 30      # about 3 s on one idle core


def test_comments_strings_and_layout_of_any_size_hide_nothing_and_cost_little():
    """Megabytes of comments, blank lines and strings around a function change none of its
    fingerprints and take a moment; they count for nothing against the size limit."""
    code = DISTINCTIVE["softmax"]
    plain = similarity.document(("plain", "a"), {"softmax": code})
    padding = ("#\n" * 2_000_000 + "# " + "x" * 5_000_000 + "\n" + "\n" * 2_000_000
               + '"""' + "a long docstring\n" * 300_000 + '"""\n' + "'" + "a long string " * 300_000 + "'\n")
    started = time.process_time()
    padded = similarity.document(("padded", "a"), {"softmax": padding + code.replace("\n    ", "\n    # why\n    ")})
    assert time.process_time() - started < 20          # about 1 s on one idle core
    assert padded.unread is None and padded.prints.keys() == plain.prints.keys()


def test_too_much_code_is_listed_not_compared_and_deep_code_still_counts():
    """Code past the limit (repeated or not) makes a hand-in one to look at, never a long wait;
    code nested past what Python writes out again keeps the rest of its function."""
    started = time.process_time()
    repeated = similarity.document(("repeated", "a"), {"softmax": DISTINCTIVE["softmax"] + "_a = 1\n" * 25_000})
    unique = similarity.document(("unique", "a"), {"softmax": "".join(f"_a{i} = {i}\n" for i in range(20_000))})
    unparsable = similarity.document(("deep", "a"), {"softmax": "x = a" + ".b" * 20_000})
    assert time.process_time() - started < 20
    assert repeated.unread and unique.unread and "100,000 characters of code" in unique.unread
    assert similarity.compare([repeated, unique, unique]) == []
    assert unparsable.unread is None and not unparsable.prints
    deep = DISTINCTIVE["softmax"].replace("    return", "    x = " + " + ".join(["peak"] * 2000) + "\n    return")
    plain = similarity.document(("plain", "a"), {"softmax": DISTINCTIVE["softmax"]})
    nested = similarity.document(("nested", "a"), {"softmax": deep})
    assert len(plain.prints.keys() & nested.prints.keys()) >= 0.8 * len(plain.prints)


@pytest.mark.slow
def test_a_hand_in_running_code_it_builds_at_run_time_is_listed_for_a_person(course, tmp_path):
    """Code made at run time (here from character codes) cannot be compared without running it:
    such a hand-in is listed as not compared, with the reason, and the rest are compared."""
    assignment = course.assignment("attention")
    hand_ins = {"original": cohort.solved(course, assignment, DISTINCTIVE),
                "copier": cohort.solved(course, assignment, _near_copy(DISTINCTIVE))}
    hand_ins["builds-its-code"] = cohort.solved(course, assignment, {
        g: f"exec(bytes({list(code.encode())}).decode())\n" for g, code in DISTINCTIVE.items()})
    found = _report(course, tmp_path, hand_ins, assignment)
    assert found["not compared"] == {"builds-its-code"}, found
    assert found["similarity"] == {"copier & original"}, found


@pytest.mark.slow
def test_a_hand_in_graded_from_another_folder_is_still_compared(course, tmp_path):
    """A late hand-in graded from a folder of its own must not hide the class's copies: the others
    are read from the grading folder's staged copies, and the cells course.yaml grades are part of
    what names a kept reading."""
    assignment = course.assignment("attention")
    out, late = tmp_path / "out", tmp_path / "late"
    cohort.write(cohort.solved(course, assignment, DISTINCTIVE), str(out / "submitted"), "anna", assignment)
    cohort.write(cohort.solved(course, assignment, _near_copy(DISTINCTIVE)), str(out / "submitted"), "ben", assignment)
    cohort.write(cohort.solved(course, assignment), str(late), "erin", assignment)
    groups, _ = cohort_analysis.similar_groups(course, assignment, ["anna", "ben", "erin"], str(late), str(out))
    assert [[student for student, _ in group.members] for group in groups] == [["anna", "ben"]]
    release = _release(course, assignment)
    paths = {similarity_cache.Cache(str(out), assignment.id, release, cells)._path(b"{}")
             for cells in (["softmax", "entropy_bits"], ["softmax"])}
    assert len(paths) == 2


def test_a_string_of_any_quoting_counts_as_one_character_of_code():
    """Python 3.11.2's possessive repeats (Debian 12's Python) cut a triple-quoted string short
    and counted its text as code: whichever `re` runs here, each string is one."""
    for code, size in (('"""a\nb"""\n', 1), ("'''a\n'b'''\n", 1), ("x = 'a b'  # c\n", 3), ('f = "a\\"b"\n', 3)):
        assert code_size.code_size(code, 100) == size, code

"""Which hand-ins look copied: winnowed fingerprints of normalised code, as MOSS computes them.

Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document
fingerprinting" (SIGMOD 2003), the method of Stanford's MOSS. Each submission's
solution cells become one stream of Python tokens in which every name the student
binds (variables, parameters, functions) is ``V``, every string ``S``, and comments
and blank lines are gone; its top-level
definitions are sorted by their normalised text, so renaming variables, moving
functions and rewording comments change nothing. Every ``K`` consecutive tokens
are hashed and, of every ``WINDOW`` consecutive hashes, the smallest is kept:
two submissions sharing a passage of ``K + WINDOW - 1`` tokens share at least
one kept hash.

What is not evidence is left out, as MOSS does: the released notebook's given
code (the stub's lines), and fingerprints that many submissions share
(the obvious way to write a line, or a solution everybody found). Candidate pairs
come from an inverted index fingerprint -> submissions, so only pairs that share
something are ever compared. A flag is a reason for a person to look, never a
penalty.
"""

import ast
import bisect
import io
import token
import tokenize
import zlib
from dataclasses import dataclass, field

from selfcheck.program import grade_id, is_solution, source

K = 5                  # tokens per k-gram: shorter and every `return np.` matches
WINDOW = 4             # so any shared run of K + WINDOW - 1 = 8 tokens is caught
MIN_SHARED = 16        # fewer shared fingerprints (about 40 tokens, four or five lines) is never a flag
COMMON_SHARE = 0.1     # a fingerprint held by this share of the cohort is common knowledge,
COMMON_AT_LEAST = 3    # ... and by never fewer than this many: two students alone never make it common


@dataclass
class Document:
    """One submission's normalised solution code: tokens, where each came from, its fingerprints."""
    key: tuple                                     # (student, assignment)
    lines: dict                                    # (cell, line number) -> source line
    origins: list = field(default_factory=list)    # token index -> (cell, line number)
    prints: dict = field(default_factory=dict)     # fingerprint -> first token index


# a solution is a few hundred lines: past this, a cell is padding, and comparing it would only cost time
MAX_CELL_CHARS = 100_000


def _parse(code):
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):    # nesting too deep is a student's too
        return None


def _bound(tree):
    """The names a parsed cell binds (variables, parameters, functions, imports): the names a student picks."""
    found = set()
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
    return found


def _normalised(code, bound, given):
    """(token text, line number) of ``code`` with the names in ``bound`` (the student's own),
    strings and layout made uniform; numpy's, Python's and keyword arguments' names stay.
    Tokens on a line of ``given`` code (the stub's) are left out, and so are dedents, which
    sit on the line of whatever follows."""
    out, previous = [], None
    lines = code.splitlines()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER, token.DEDENT):
                continue
            if tok.start[0] <= len(lines) and lines[tok.start[0] - 1].strip() in given:
                previous = tok.string
                continue
            if tok.type == token.NAME and tok.string in bound and previous != ".":
                text = "V"          # an attribute (np.exp, x.sum) is an API, not a name one picks
            elif tok.type == token.STRING:
                text = "S"
            elif tok.type in (token.NEWLINE, token.INDENT):
                text = token.tok_name[tok.type][0]
            else:
                text = tok.string
            out.append((text, tok.start[0]))
            previous = tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass                # what was read before the error still counts
    return out


def _units(tree):
    """The first line of each top-level statement of a parsed cell ([1]: the whole cell when it does not parse)."""
    if tree is None or not tree.body:
        return [1]
    return [min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) for node in tree.body]


def _kgrams(texts):
    return [zlib.crc32("\x00".join(texts[i:i + K]).encode()) for i in range(len(texts) - K + 1)]


def winnow(hashes):
    """{hash: first position} of the hashes winnowing keeps: the smallest of every window (the rightmost on a tie)."""
    kept, last = {}, -1
    for start in range(max(len(hashes) - WINDOW + 1, 1 if hashes else 0)):
        window = hashes[start:start + WINDOW]
        low = min(window)
        pos = start + max(i for i, h in enumerate(window) if h == low)
        if pos != last:
            kept.setdefault(low, pos)
            last = pos
    return kept


def document(key, cells, given=frozenset()):
    """A Document from ``cells`` ({cell name: code}), top-level statements in a canonical order,
    the lines of ``given`` (see ``given_lines``) left out."""
    doc = Document(key, {})
    cells = {cell: code[:MAX_CELL_CHARS] for cell, code in cells.items()}
    trees = {cell: _parse(code) for cell, code in cells.items()}
    bound = set().union(*(_bound(tree) for tree in trees.values()))
    units = []
    for cell, code in cells.items():
        for number, line in enumerate(code.splitlines(), 1):
            doc.lines[cell, number] = line
        starts = _units(trees[cell])
        pieces = {start: [] for start in starts}
        for text, line in _normalised(code, bound, given):     # the statement holding the line
            pieces[starts[max(bisect.bisect_right(starts, line) - 1, 0)]].append((text, line))
        units += [(" ".join(t for t, _ in toks), cell, toks) for toks in pieces.values()]
    texts = []
    for _, cell, toks in sorted(units, key=lambda u: u[0]):
        texts += [t for t, _ in toks]
        doc.origins += [(cell, line) for _, line in toks]
    doc.prints = winnow(_kgrams(texts))
    return doc


def notebook_cells(nb):
    """{grade id: code} of a notebook's code solution cells (what the student wrote)."""
    return {grade_id(c) or f"cell {i}": source(c) for i, c in enumerate(nb.get("cells", []))
            if c.get("cell_type") == "code" and is_solution(c)}


def given_lines(nb):
    """The lines of a released notebook's code, stripped: given to everyone, never evidence."""
    return frozenset(line.strip() for c in nb.get("cells", []) if c.get("cell_type") == "code"
                     for line in source(c).splitlines() if line.strip())


@dataclass
class Pair:
    a: Document
    b: Document
    shared: list           # fingerprints both hold (neither given nor common)
    score: float           # shared / the smaller submission's own fingerprints

    def matching_lines(self):
        """({(cell, line)} of a, of b) that hold a shared passage."""
        def lines(doc):
            found = set()
            for h in self.shared:
                start = doc.prints[h]
                found.update(o for o in doc.origins[start:start + K] if o in doc.lines)   # not a final DEDENT
            return found
        return lines(self.a), lines(self.b)


def compare(documents, threshold=0.5):
    """The pairs of ``documents`` (one assignment's) that score at least ``threshold``, most alike first.

    A fingerprint held by ``COMMON_SHARE`` of the documents (and by at least
    ``COMMON_AT_LEAST``) is left out of both the match and the denominator."""
    index = {}
    for n, doc in enumerate(documents):
        for h in doc.prints:
            index.setdefault(h, []).append(n)
    common = max(COMMON_AT_LEAST, COMMON_SHARE * len(documents))
    own = [0] * len(documents)
    shared = {}
    for h, holders in index.items():
        if len(holders) >= common:
            continue
        for n in holders:
            own[n] += 1
        for i, first in enumerate(holders):
            for second in holders[i + 1:]:
                shared.setdefault((first, second), []).append(h)
    pairs = []
    for (i, j), prints in shared.items():
        score = len(prints) / max(1, min(own[i], own[j]))
        if len(prints) >= MIN_SHARED and score >= threshold:
            pairs.append(Pair(documents[i], documents[j], prints, round(score, 3)))
    return sorted(pairs, key=lambda p: (-p.score, -len(p.shared), p.a.key, p.b.key))

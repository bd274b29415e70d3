"""Which hand-ins look copied: winnowed fingerprints of the code grading runs, as MOSS computes them.

Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document
fingerprinting" (SIGMOD 2003), the method of Stanford's MOSS.

What is compared is the code grading runs, chosen by the grader's own selection
(:func:`graded_code`, which is ``selfcheck.program.program`` with the released
notebook as the backbone): each solution cell of the release by its grade id, the
first cell holding that id whatever its flags say, and the imports and definitions
of every cell the student added; never the given cells, which come from the release.
Code run from strings (``exec``, ``eval``, ``compile`` of literal text, however joined or
encoded, :mod:`autograder.report.code_in_strings`) is read as the code it is; a hand-in that runs code
built any other way is listed as not compared, for a person to look at.
Each top-level statement is read as Python reads it (``ast``), so comments and
layout are gone before anything is measured or compared, and is written out again
(``ast.unparse``) as tokens in which every name the student binds is ``V`` and every
string ``S``. The statements are sorted by that text, so renaming variables, moving
functions and rewording comments change nothing. Every ``K`` consecutive tokens are
hashed and, of every ``WINDOW`` consecutive hashes, the smallest is kept: two hand-ins
sharing a passage of ``K + WINDOW - 1`` tokens share at least one kept hash.

What is not evidence is left out, as MOSS does: the lines of the released stub, and
*common* fingerprints, those of the obvious way to write it. A fingerprint is common
when the ``known`` code holds it (the reference solution and the catalogued ways to
write it, right or wrong: every k-gram of theirs, not only the winnowed ones, so a passage
written as they write it is common whichever of its k-grams a hand-in keeps) or when
``COMMON_SHARE`` of the cohort holds it, and never at fewer than
``COMMON_AT_LEAST`` hand-ins: a few students sharing one copy are a large share of a
small class, not the obvious way. No k-gram runs from one statement into the next, whose
order says nothing of how either was written. In a small class little is common, so the
idioms every student meets (the textbook softmax, a vectorised experiment written the way
numpy invites) are kept from making a flag by where they lie: a pair is flagged only when
its shared fingerprints lie in two cells or more (``IN_A_PLACE`` in each) or fill a long
passage of one (``ONE_PLACE``). Candidate pairs come from an inverted index
fingerprint -> hand-ins, so only pairs that share something are compared; flagged
pairs are joined into groups (connected clusters). A flag is a reason for a person
to look, never a penalty.

The work is bounded without letting padding hide code: a hand-in's size is its code
alone (comments, layout and the text of plain strings do not count), measured in
one linear pass before anything is parsed; a hand-in with more code than
``MAX_CODE_CHARS`` is not compared but listed as too large to compare, so padding
draws a person's eye instead of hiding a copy.
"""

import ast
import io
import token
import tokenize
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from autograder.report import code_in_strings
from autograder.report.code_size import code_size
from selfcheck.program import program, source

K = 5                  # tokens per k-gram: shorter and every `return np.` matches
WINDOW = 4             # so any shared run of K + WINDOW - 1 = 8 tokens is caught
MIN_SHARED = 16        # fewer shared fingerprints (about 40 tokens, four or five lines) is never a flag
IN_A_PLACE = 8         # a flag needs two cells each holding this many of the shared fingerprints,
ONE_PLACE = 32         # ... or one cell holding this many (about 80 tokens): one function alike is no copy
COMMON_SHARE = 0.1     # a fingerprint held by this share of the cohort is the obvious way to write it,
COMMON_AT_LEAST = 10   # ... but never one held by fewer hand-ins than this
MAX_CODE_CHARS = 100_000   # code a hand-in may hold and be compared: fifty times a reference solution
MAX_DEPTH = 100        # syntax-tree levels read below a statement; deeper is `...` (Python's unparser fails a few hundred down)
SHOWN_STRING = 120     # characters of a string kept for the side-by-side view (a string is one token either way)


@dataclass
class Document:
    """One hand-in's code as compared: its lines, where each token came from, its fingerprints."""
    key: tuple                                     # (student, assignment)
    lines: dict = field(default_factory=dict)      # (cell, line number) -> line of the code as compared
    origins: list = field(default_factory=list)    # token index -> (cell, line number)
    prints: dict = field(default_factory=dict)     # fingerprint -> first token index
    unread: str | None = None                      # why it was not compared, or None


def graded_code(nb: dict, release: dict, cells: Iterable[str]) -> dict[str, str]:
    """{cell: code} of what grading runs of the student's notebook ``nb``: the program of
    ``selfcheck.program`` with the release as its backbone and ``cells`` (every graded part's)
    as the student's own; the given cells, which come from the release, left out."""
    prog = program(nb, release, own=set(cells))
    given = {label for label, *_ in prog.given}
    found: dict[str, str] = {}
    for label, code, *_ in prog.cells:
        if code and label not in given:
            name, n = label, 1
            while name in found:
                n += 1
                name = f"{label} {n}"
            found[name] = code
    return found


# --- the code as Python reads it ------------------------------------------------------------------

def _parse(code):
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None      # a cell that does not parse does not run when graded either


_CUT = (ast.JoinedStr, ast.FormattedValue)     # their parts must stay what they are


def _readable(statement, bound):
    """``statement`` with each expression more than MAX_DEPTH levels down replaced by ``...``
    and long strings shortened, so writing it out is bounded (walked without recursion); the
    names it binds (variables, parameters, functions, imports: the names a student picks) are
    added to ``bound``."""
    stack = [(statement, 0)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)     # what ast.parse makes: never a subclass
        if kind is ast.Name and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif kind is ast.arg:
            bound.add(node.arg)
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            bound.add(node.name)
        elif kind is ast.alias:
            bound.add((node.asname or node.name).split(".")[0])
        elif kind is ast.Constant and isinstance(node.value, (str, bytes)):
            node.value = node.value[:SHOWN_STRING]
        for name in node._fields:
            value = getattr(node, name, None)
            children = value if type(value) is list else [value] if isinstance(value, ast.AST) else []
            if depth < MAX_DEPTH:
                stack += [(child, depth + 1) for child in children if isinstance(child, ast.AST)]
                continue
            for i, child in enumerate(children):
                if not isinstance(child, ast.AST):
                    continue
                if isinstance(child, ast.expr) and not isinstance(node, _CUT):
                    child = ast.Constant(...)
                    if value is children:
                        children[i] = child
                    else:
                        setattr(node, name, child)
                else:
                    stack.append((child, depth + 1))
    return statement


def _statements(tree, bound):
    """The text of each top-level statement of a parsed cell, as Python would write it out;
    the names they bind are added to ``bound``."""
    return [ast.unparse(_readable(node, bound)) for node in tree.body]


def _normalised(text, bound, given):
    """(token text, line number) of one statement's text with the names in ``bound`` (the
    student's own) and strings made uniform; numpy's, Python's and keyword arguments' names
    stay. Tokens on a line of ``given`` code (the stub's) are left out, and so are dedents,
    which sit on the line of whatever follows."""
    out, previous = [], None
    stub = {n for n, line in enumerate(text.splitlines(), 1) if line.strip() in given}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NL, tokenize.ENDMARKER, token.DEDENT):
            continue
        if tok.start[0] in stub:
            previous = tok.string
            continue
        if tok.type == token.NAME and tok.string in bound and previous != ".":
            word = "V"          # an attribute (np.exp, x.sum) is an API, not a name one picks
        elif tok.type == token.STRING:
            word = "S"
        elif tok.type in (token.NEWLINE, token.INDENT):
            word = token.tok_name[tok.type][0]
        else:
            word = tok.string
        out.append((word, tok.start[0]))
        previous = tok.string
    return out


def _kgrams(texts):
    return [zlib.crc32("\x00".join(texts[i:i + K]).encode()) for i in range(len(texts) - K + 1)]


def _every(hashes: list[int]) -> dict[int, int]:
    """{hash: first position} of every hash: what known code holds, whichever of them a hand-in keeps."""
    kept: dict[int, int] = {}
    for pos, h in enumerate(hashes):
        kept.setdefault(h, pos)
    return kept


def winnow(hashes: list[int]) -> dict[int, int]:
    """{hash: first position} of the hashes winnowing keeps: the smallest of every window (the rightmost on a tie)."""
    kept: dict[int, int] = {}
    last = -1
    for start in range(max(len(hashes) - WINDOW + 1, 1 if hashes else 0)):
        window = hashes[start:start + WINDOW]
        low = min(window)
        pos = start + len(window) - 1 - window[::-1].index(low)
        if pos != last:
            kept.setdefault(low, pos)
            last = pos
    return kept


def document(key: tuple, cells: dict[str, str], given: frozenset[str] = frozenset(), every: bool = False) -> Document:
    """A Document from ``cells`` ({cell name: code}, see ``graded_code``): top-level statements
    in a canonical order, each distinct one once, the lines of ``given`` (``given_lines``) left out.
    A k-gram never runs from one statement into the next, whose order says nothing of how it was
    written; ``every`` keeps every k-gram rather than the winnowed ones (known code: a hand-in
    writing a passage of it may keep any of them)."""
    doc = Document(key)
    size = 0
    for code in cells.values():
        size += code_size(code, MAX_CODE_CHARS - size)
        if size > MAX_CODE_CHARS:
            doc.unread = (f"more than {MAX_CODE_CHARS:,} characters of code (comments, layout and "
                          "strings not counted): far more than any solution needs")
            return doc
    bound: set[str] = set()
    texts: dict[str, list[str]] = {}
    hidden = 0
    for cell, code in cells.items():
        tree = _parse(code)
        run, unknown = code_in_strings.strings_run(tree) if tree and code_in_strings.may_run(code) else ([], 0)
        texts[cell] = [text for t in ([tree] if tree else []) + run for text in _statements(t, bound)]
        hidden += unknown
    if hidden:
        doc.unread = (f"it runs code built at run time ({hidden} call{'s' if hidden > 1 else ''} of exec, eval "
                      "or compile on something other than literal text), which cannot be compared: look at it")
        return doc
    units: dict[str, tuple[str, list[tuple[str, int]]]] = {}
    for cell, statements in texts.items():
        lines = 0
        for text in statements:
            tokens = [(word, lines + n) for word, n in _normalised(text, bound, given)]
            for n, line in enumerate(split := text.splitlines(), lines + 1):
                doc.lines[cell, n] = line
            lines += len(split)
            if tokens:
                units.setdefault(" ".join(word for word, _ in tokens), (cell, tokens))
    hashes: list[int] = []
    starts: list[int] = []
    for _, (cell, tokens) in sorted(units.items()):
        grams = _kgrams([word for word, _ in tokens])
        hashes += grams
        starts += range(len(doc.origins), len(doc.origins) + len(grams))
        doc.origins += [(cell, n) for _, n in tokens]
    doc.prints = {h: starts[pos] for h, pos in (_every if every else winnow)(hashes).items()}
    return doc


def given_lines(release: dict) -> frozenset[str]:
    """The lines of a released notebook's code as compared (see ``document``), stripped: given
    to everyone, never evidence."""
    found: set[str] = set()
    for cell in release.get("cells", []):
        tree = _parse(source(cell)) if cell.get("cell_type") == "code" else None
        for text in _statements(tree, set()) if tree else ():
            found.update(line.strip() for line in text.splitlines() if line.strip())
    return frozenset(found)


# --- comparing a cohort ---------------------------------------------------------------------------

@dataclass
class Pair:
    a: Document
    b: Document
    shared: list           # fingerprints both hold (neither given nor common)
    score: float           # shared / the smaller hand-in's own fingerprints

    def matching_lines(self) -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
        """({(cell, line)} of a, of b) that hold a shared passage."""
        def lines(doc: Document) -> set[tuple[str, int]]:
            found: set[tuple[str, int]] = set()
            for h in self.shared:
                start = doc.prints[h]
                found.update(doc.origins[start:start + K])
            return found
        return lines(self.a), lines(self.b)


@dataclass
class Group:
    """Hand-ins joined by flagged pairs (a connected cluster), its pairs most alike first."""
    pairs: list

    @property
    def members(self) -> list[tuple]:
        return sorted({doc.key for pair in self.pairs for doc in (pair.a, pair.b)})

    @property
    def score(self) -> float:
        return max(pair.score for pair in self.pairs)


def common_prints(documents: list[Document], known: Iterable[Document] = ()) -> set[int]:
    """The fingerprints that are no evidence: held by ``known`` code, or by ``COMMON_SHARE`` of
    ``documents`` and at least ``COMMON_AT_LEAST`` of them."""
    counts: dict[int, int] = {}
    for doc in documents:
        for h in doc.prints:
            counts[h] = counts.get(h, 0) + 1
    many = max(COMMON_AT_LEAST, COMMON_SHARE * len(documents))
    return {h for h, n in counts.items() if n >= many}.union(*(doc.prints for doc in known))


def compare(documents: Iterable[Document], threshold: float = 0.5,
            known: Iterable[Document] = ()) -> list[Pair]:
    """The pairs of ``documents`` (one assignment's hand-ins) that score at least ``threshold``,
    most alike first; common fingerprints (``common_prints``) count in neither the match nor
    the denominator, and hand-ins not read (``Document.unread``) are not compared."""
    documents = [doc for doc in documents if doc.unread is None]
    common = common_prints(documents, known)
    index: dict[int, list[int]] = {}
    for n, doc in enumerate(documents):
        for h in doc.prints:
            if h not in common:
                index.setdefault(h, []).append(n)
    own = [0] * len(documents)
    shared: dict[tuple[int, int], list[int]] = {}
    for h, holders in index.items():
        for n in holders:
            own[n] += 1
        for i, first in enumerate(holders):
            for second in holders[i + 1:]:
                shared.setdefault((first, second), []).append(h)
    pairs = []
    for (i, j), prints in shared.items():
        score = len(prints) / max(1, min(own[i], own[j]))
        if len(prints) >= MIN_SHARED and score >= threshold and _in_places(documents[i], documents[j], prints):
            pairs.append(Pair(documents[i], documents[j], prints, round(score, 3)))
    return sorted(pairs, key=lambda p: (-p.score, -len(p.shared), p.a.key, p.b.key))


def _in_places(a: Document, b: Document, prints: list[int]) -> bool:
    """The shared fingerprints lie in two cells or more, at least IN_A_PLACE in each, in either hand-in, or
    ONE_PLACE in one: a vectorised function two students arrive at alike, or idioms met once here and once
    there, are no copy; a copy of the work is."""
    for doc in (a, b):
        held: dict[str, int] = {}
        for h in prints:
            cell = doc.origins[doc.prints[h]][0]
            held[cell] = held.get(cell, 0) + 1
        most = sorted(held.values(), reverse=True)
        if most[0] >= ONE_PLACE or (len(most) > 1 and most[1] >= IN_A_PLACE):
            return True
    return False


def groups(pairs: list[Pair]) -> list[Group]:
    """The Groups the flagged ``pairs`` join, the most alike first."""
    parent: dict[tuple, tuple] = {}

    def root(key: tuple) -> tuple:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    for pair in pairs:
        parent[root(pair.a.key)] = root(pair.b.key)
    found: dict[tuple, list[Pair]] = {}
    for pair in pairs:
        found.setdefault(root(pair.a.key), []).append(pair)
    return sorted((Group(found_pairs) for found_pairs in found.values()), key=lambda g: (-g.score, g.members))

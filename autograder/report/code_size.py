"""How much code a cell holds, in one linear pass before anything is parsed: the similarity
report compares no hand-in past a size (autograder/report/similarity.py), and padding made of
comments, layout or strings must not reach it."""

import re
import sys

# Python's strings and comments, in forms that never backtrack far (each character can be read
# one way only), so even a hostile cell is one linear pass; possessive repeats make it faster
# where `re` has them right (3.11, after its first patch releases), and mean nothing else
_LEXEME_SOURCE = r"""(?P<string>'''[^'\\]*+(?:(?:\\.?|'(?!''))[^'\\]*+)*+(?:'''|\Z)""" \
    r"""|\"\"\"[^"\\]*+(?:(?:\\.?|"(?!""))[^"\\]*+)*+(?:\"\"\"|\Z)""" \
    r"""|'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'?|"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"?)""" \
    r"""|(?P<layout>(?=[\s#])\s*+(?:#[^\r\n]*+\s*+)*+)|(?P<code>[^\s#'"]++)"""


def _lexemes() -> re.Pattern:
    """The lexer, possessive where ``re`` reads it as the plain one reads the same source: 3.11.2's
    (Debian 12's Python) cuts a triple-quoted string short."""
    plain = re.compile(_LEXEME_SOURCE.replace("*+", "*").replace("++", "+"), re.S)
    if sys.version_info < (3, 11):
        return plain
    quick = re.compile(_LEXEME_SOURCE, re.S)
    probe = "x = 1  # a\n'''b\n'c'''\n\"\"\"d\n\"e\"\"\"\n'f g' \"h\\\"i\"\n"
    same = [m.span() for m in quick.finditer(probe)] == [m.span() for m in plain.finditer(probe)]
    return quick if same else plain


_LEXEMES = _lexemes()
_F_PREFIX = re.compile(r"(?<!\w)(?:[fF][rR]?|[rR][fF])\Z")


def code_size(code: str, limit: int) -> int:
    """The characters of code in ``code``, counting stops past ``limit``: comments and layout
    count nothing and a plain string counts one (the parser keeps its text as it is); an
    f-string counts whole, since its braces hold code."""
    size, before = 0, ""
    for match in _LEXEMES.finditer(code):
        kind, text = match.lastgroup, match.group()
        if kind == "code":
            size += len(text)
        elif kind == "string":
            size += len(text) if _F_PREFIX.search(before) else 1
        before = text if kind == "code" else ""
        if size > limit:
            break
    return size

"""Text a student chose, at the edges where it leaves the grader: a terminal, a log, a spreadsheet.

Student ids, file and folder names, error messages and failure reasons are the students'. Three
places would run what they hold:

* a terminal runs escape sequences (a title change, a cleared screen, a clipboard write, hidden
  text): :func:`shown` writes every control, format and bidirectional character as a visible
  escape (``\\x1b``, ``\\u202e``); :func:`guard_logging` does it to every log record of the
  process (nbgrader's commands, formgrader, the course's plugins) and :func:`guarded` to all
  the ``course`` command prints;
* a spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@``, and splits a field
  at ``;`` (in a ``;`` locale), ``,``, tabs and newlines, even inside quotes: :func:`cell` quotes
  every text field (:func:`writer`) and puts a ``'`` before each piece that would start with a
  formula trigger; numbers are written as they are;
* an LMS matches a student by id, so an id is never changed in an export: one a spreadsheet
  could run, that holds control characters or that looks like another (mixed scripts,
  compatibility forms) is refused where it enters (:func:`id_problem`), and an export meeting
  one anyway stops (:class:`UnsafeId`) rather than write it changed or as a formula.
"""

from __future__ import annotations

import csv
import functools
import logging
import numbers
import re
import sys
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any, TypeVar

from autograder.errors import CourseError
from autograder.records.store import replacing
from selfcheck.wire import clean_text

F = TypeVar("F", bound=Callable[..., Any])

# --- terminals and logs ----------------------------------------------------------------------


def _escape(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def shown(text: object, keep: str = "") -> str:
    """``text`` as a terminal may show it: every character that is not printable (controls,
    escape, bidirectional and other format characters, separators other than the space) as
    a visible escape, those in ``keep`` (say ``"\\n"`` for a text of several lines) as they are."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape(ch) for ch in text)


def shown_lines(text: object) -> str:
    """:func:`shown`, keeping newlines and tabs: a message of several lines."""
    return shown(text, "\n\t")


class _Shown:
    """A log record's argument, shown (:func:`shown`) however the message formats it."""

    __slots__ = ("value",)

    def __init__(self, value: object):
        self.value = value

    def __str__(self) -> str:
        return shown(self.value)

    def __repr__(self) -> str:
        return shown(repr(self.value))


def _arg(value: Any) -> Any:
    return value if value is None or isinstance(value, numbers.Number) else _Shown(value)


def _guard_record(record: logging.LogRecord) -> None:
    """Make ``record`` show its text: its arguments on one line each, its message and traceback
    with their own lines."""
    if isinstance(record.args, Mapping):
        record.args = {k: _arg(v) for k, v in record.args.items()}
    elif record.args:
        record.args = tuple(_arg(a) for a in record.args)
    record.msg = shown_lines(record.msg)
    if record.exc_info and not record.exc_text:
        record.exc_text = shown_lines(logging.Formatter().formatException(record.exc_info))


def guard_logging() -> None:
    """Every log record made in this process from now on shows its text (:func:`shown`), whoever
    logs it and wherever it is written: one record factory, installed once."""
    old = logging.getLogRecordFactory()
    if getattr(old, "shows_text", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = old(*args, **kwargs)
        _guard_record(record)
        return record
    factory.shows_text = True       # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


class Stream:
    """A text stream whose every write is shown (:func:`shown`), newlines, tabs and carriage
    returns (a progress bar's) kept; anything else is the wrapped stream's."""

    def __init__(self, stream: IO[str]):
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(shown(text, "\n\t\r"))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def guarded(main: F) -> F:
    """``main`` with everything it prints (stdout, stderr) and logs shown (:func:`shown`)."""
    @functools.wraps(main)
    def run(*args: Any, **kwargs: Any) -> Any:
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = Stream(out), Stream(err)
        guard_logging()
        try:
            return main(*args, **kwargs)
        finally:
            sys.stdout, sys.stderr = out, err
    return run      # type: ignore[return-value]


# --- ids -------------------------------------------------------------------------------------

_TRIGGERS = ("=", "+", "-", "@")
_AFTER_DASH = re.compile(r"[^\W_][\w.@]*")       # what may follow a leading "-": a plain login,
_COMPUTED = re.compile(r"\d[\d.eE]*|[A-Za-z]{1,3}\d+|[Rr]\d*[Cc]\d*")    # not a number or a cell
_EAST_ASIAN = {"CJK": "CJK", "HIRAGANA": "CJK", "KATAKANA": "CJK", "HANGUL": "CJK", "IDEOGRAPHIC": "CJK"}
_NOT_A_SCRIPT = {"MODIFIER", "FEMININE", "MASCULINE", "MICRO"}


def _scripts(text: str) -> dict[str, str]:
    """script -> its first letter in ``text`` (``LATIN``, ``CYRILLIC``, ...; kanji and kana as one)."""
    found: dict[str, str] = {}
    for ch in text:
        if ch.isalpha():
            word = unicodedata.name(ch, "UNKNOWN").split(" ")[0]
            if word not in _NOT_A_SCRIPT:
                found.setdefault(_EAST_ASIAN.get(word, word), ch)
    return found


def id_problem(value: str) -> str | None:
    """None when ``value`` can be written, unchanged, as an id in every export (a spreadsheet
    runs nothing of it, an LMS matches it as it is) and is not a look-alike of another id;
    else why not, in words an instructor can act on.

    A leading ``-`` is accepted when a plain login follows (``-john@x.edu``, letters, digits,
    ``.``, ``_`` and ``@``, not a number nor a cell like ``A1``): a university's sign-on may hand
    out such names and the LMS must match them exactly; what follows holds no operator, call,
    cell or reference to another program, so a spreadsheet that reads it as a formula shows an
    error, never runs nor computes anything."""
    if not value:
        return "empty"
    if value[0] in ("'", '"'):
        return f"it starts with {value[0]}, which a spreadsheet hides (and so shows another id)"
    if value[0] in _TRIGGERS and not (value[0] == "-" and _AFTER_DASH.fullmatch(value[1:])
                                                      and not _COMPUTED.fullmatch(value[1:])):
        return f"it starts with {value[0]}, which a spreadsheet runs as a formula"
    bad = [ch for ch in value if not ch.isprintable() or ch.isspace()]
    if bad or clean_text(value) != value:
        odd = ", ".join("a space" if ch == " " else shown(ch) for ch in dict.fromkeys(bad))
        return "it holds spaces, control, format or bidirectional characters" + (f" ({odd})" if odd else "")
    if set(value) & set(",;|"):
        return "it holds , ; or |, where a spreadsheet splits a field or starts a command"
    if unicodedata.normalize("NFKC", value) != value:
        alike = ", ".join(f"{ch} {unicodedata.name(ch, _escape(ch))}" for ch in dict.fromkeys(value)
                          if unicodedata.normalize("NFKC", ch) != ch)
        return (f"it holds look-alike characters ({alike}), so it is not the id "
                f"{unicodedata.normalize('NFKC', value)} it looks like")
    scripts = _scripts(value)
    if len(scripts) > 1:
        names = " and ".join(s.title() for s in scripts)
        which = ", ".join(f"{ch} is {unicodedata.name(ch, '?')}" for ch in list(scripts.values())[1:])
        return f"it mixes {names} letters ({which}), so it looks like another id and is a student of its own"
    return None


class UnsafeId(CourseError):
    """An export met an id it can write neither unchanged nor safely."""


# --- spreadsheets ----------------------------------------------------------------------------

_NUMBER = re.compile(r"-?\d+(\.\d+)?")
# a piece a spreadsheet could split off: after a separator some locale or import dialog uses (the
# comma, the semicolon, the bar, a tab, any line break, and their Arabic, full-width and ideographic
# forms), past spaces of any width and a text qualifier (an import dialog takes a quoted piece's
# inside as the cell), starting with a formula's sign or one of its look-alikes
_SEPARATORS = "[;,|\t\n\r\x0b\x0c\x85\u2028\u2029\u060c\u061b\u3001\uff0c\uff1b]"
_PIECE = re.compile(rf"(^|{_SEPARATORS})([ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]*\"?)"
                    r"(?=[=+\-@\u2212\ufe62\ufe63\ufe66\ufe6b\uff1d\uff0b\uff0d\uff20])")
# a signed number, as the grader's messages list them ("[1.5, -2.71, -inf]")
_PLAIN = re.compile(r"[+-](?:\d+\.?\d*(?:e[+-]?\d+)?|\.\d+|inf|nan)[ )\]}]*", re.I)


def _guard(piece: re.Match) -> str:
    """A ``'`` after the separator and spaces of ``piece``, unless what follows is a plain number
    up to the same separator or the field's end: a spreadsheet that splits the piece off there
    splits it off after it too, and reads a number (the field's own start, and a quoted piece,
    whose inside is not split, are always guarded)."""
    text, separator = piece.string, piece.group(1)
    plain = separator and not piece.group(2).endswith('"') and _PLAIN.match(text, piece.end())
    if plain and text[plain.end():plain.end() + 1] in ("", separator):
        return piece.group(0)
    return piece.group(0) + "'"


class Figure:
    """A number given as text (``"8.5"``): written unquoted, as it is."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __float__(self) -> float:       # the csv module writes a number unquoted
        return float(self.text)


def cell(value: Any) -> Any:
    """A CSV field no spreadsheet runs: numbers (and text that is a plain number) as they are;
    other text clean (:func:`selfcheck.wire.clean_text`), with a ``'`` before each piece a
    spreadsheet could split off (:data:`_PIECE`) that would start a formula, as OWASP recommends for
    the field's start, unless that piece is a plain signed number (:func:`_guard`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = clean_text("" if value is None else value)
    if _NUMBER.fullmatch(text):
        return Figure(text)
    return _PIECE.sub(_guard, text)


def id_cell(value: Any, column: str) -> str:
    """An id column's field: the id unchanged, or :class:`UnsafeId` when it cannot be."""
    text = "" if value is None else str(value)
    why = text and id_problem(text)
    if why:
        raise UnsafeId(f"{column} {shown(text)!r} cannot be written unchanged in a spreadsheet: {why}; "
                       "it should have been refused where it entered (collect, roster.csv): give that "
                       "student a usable id there")
    return text


def writer(fh: IO[str], columns: Sequence[str], ids: tuple[str, ...] = ()) -> Callable[[Mapping], None]:
    """A function writing one row (a dict) to ``fh``: every text field quoted and :func:`cell`,
    the ``ids`` columns unchanged (:func:`id_cell`). The header is written first."""
    out = csv.DictWriter(fh, fieldnames=list(columns), quoting=csv.QUOTE_NONNUMERIC)
    out.writeheader()
    made: dict[tuple[str, Any], Any] = {}    # a text's field, made once: a term repeats its reasons thousands of times

    def field(k: str, v: Any) -> Any:
        if not isinstance(v, str):
            return id_cell(v, k) if k in ids else cell(v)
        if (k, v) not in made:
            made[k, v] = id_cell(v, k) if k in ids else cell(v)
        return made[k, v]

    def write(row: Mapping) -> None:
        out.writerow({k: field(k, v) for k, v in row.items()})
    return write


def write_csv(path: str, columns: Sequence[str], rows_: Iterable[Mapping[str, Any]],
              ids: tuple[str, ...] = ()) -> str:
    """Write rows (dicts) to ``path`` atomically: every text field quoted and spreadsheet-safe,
    the ``ids`` columns unchanged (:func:`writer`). An id that cannot be
    written unchanged stops the export (:class:`UnsafeId`), the file as it was."""
    with replacing(path, newline="", encoding="utf-8", errors="replace") as fh:
        write = writer(fh, columns, ids)
        for row in rows_:
            write(row)
    return path


_STUDENT_ID = re.compile(r"[^\s/\\:*?\"<>|\[\]]{1,100}")     # no path, no glob (nbgrader's --student)


def student_id_problem(name: str) -> str | None:
    """None when a folder name can be a student id, written unchanged in every export
    (:func:`id_problem`), else why it cannot."""
    if name.startswith(".") or not _STUDENT_ID.fullmatch(name) or clean_text(name) != name:
        return "not a usable student id (control, space, path, glob or unprintable characters, or too long)"
    why = id_problem(name)
    return f"not a usable student id: {why}" if why else None

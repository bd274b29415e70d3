"""Text a student chose leaves the grader as text: shown on a terminal and in a log, quoted and
guarded in a spreadsheet, and an id unchanged in every export, or refused where it enters.

Fast: the functions of autograder/untrusted.py, roster.csv, the CSV writer and the LMS files,
and the `course` command's own output (`course status`, `course history`). The hand-ins an
attacker names are collected by real nbgrader in tests/test_handin_paths.py and
tests/test_accounts.py, and graded by `course grade` in tests/test_hostile.py.
"""

import csv
import io
import logging
import os

import pytest

from autograder import cli, untrusted
from autograder.course import roster
from autograder.errors import CourseError
from autograder.export import lms
from autograder.nbgrader import settings
from autograder.records import store
from autograder.records.results import PartResult, Submission

# what reached an instructor's terminal: a title, a cleared screen, a clipboard write, hidden text
ATTACKS = ["\x1b]0;pwned\x07", "\x1b[2J\x1b[H", "\x1b]52;c;cHduZWQ=\x07", "\x1b[8mhidden\x1b[0m",
           "\u202ereversed", "\x9b31m", "\x00"]
RAW = ("\x1b", "\x07", "\u202e", "\x9b", "\x00")


def _raw(text):
    return [c for c in RAW if c in text]


@pytest.mark.parametrize("attack", ATTACKS)
def test_shown_writes_every_control_character_as_a_visible_escape(attack):
    said = untrusted.shown(f"Left out of alice+a+t+{attack}: {attack}.txt")
    assert not _raw(said) and "\n" not in said
    assert attack.encode("unicode_escape").decode() in said
    assert untrusted.shown("jane-doe@x.edu ü 山田") == "jane-doe@x.edu ü 山田"
    assert untrusted.shown_lines(f"one\n{attack}two") .startswith("one\n")


def test_every_log_record_shows_its_text():
    """nbgrader's commands and the course's plugins log names students chose: with the guard
    installed (as the course's nbgrader configuration does), no record carries a control
    character, whatever the format (%s, %r, a dict, an exception's traceback)."""
    stream = io.StringIO()
    log = logging.getLogger("test-untrusted")
    handler = logging.StreamHandler(stream)
    log.addHandler(handler)
    try:
        untrusted.guard_logging()
        untrusted.guard_logging()            # once is enough, twice is harmless
        name = "mallory+attention+2026-12-01 10:00:00 UTC+\x1b]0;pwned\x07"
        log.warning("Left out of %s: %s (%s)", name, "\x1b[2Jx.txt\nFAKE line", "not part of the release")
        log.warning("Not collecting %r: %d files", name, 3)
        log.warning("%(who)s handed in", {"who": "\x1b[8mhidden"})
        log.warning("made by an f-string: \x1b[31mred\nsecond line")
        try:
            raise ValueError("\x1b]52;c;cHduZWQ=\x07")
        except ValueError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    said = stream.getvalue()
    assert not _raw(said), said
    assert "Left out of mallory+attention+2026-12-01 10:00:00 UTC+\\x1b]0;pwned\\x07: \\x1b[2Jx.txt\\x0aFAKE line" in said
    assert ": 3 files" in said and "\\x1b[8mhidden handed in" in said and "red\nsecond line" in said
    assert "ValueError: \\x1b]52;c;cHduZWQ=\\x07" in said


@pytest.mark.parametrize("good", ["alice", "-john@x.edu", "jane.doe_2@uni.example", "josé", "山田たろう", "s1234567"])
def test_an_id_that_can_be_written_unchanged_is_accepted(good):
    assert untrusted.id_problem(good) is None
    assert untrusted.student_id_problem(good) is None


@pytest.mark.parametrize("bad, words", [
    ("=1+2", "formula"), ("+1", "formula"), ("@SUM(1+1)", "formula"), ("-1+1", "formula"), ("-1", "formula"),
    ("-A1", "formula"), ("-2+3+cmd|' /C calc'!A0", "formula"), ("'-john@x.edu", "hides"), ('"x', "hides"),
    ("bob;=1+2", "splits"), ("a,b", "splits"), ("tab\there", "control"), ("cr\rhere", "control"),
    ("bob\x1b[2J", "\\x1b"), ("rtl\u202e", "bidirectional"), ("j\u0430ne", "Latin and Cyrillic"),
    ("\u03bflga", "Greek and Latin"), ("ｊｏｈｎ", "look-alike"), ("", "empty")])
def test_an_id_that_cannot_is_refused_with_its_reason(bad, words):
    why = untrusted.id_problem(bad)
    assert why and words in why, (bad, why)
    assert "\n" not in why and not _raw(why)


def _roster(tmp_path, line):
    (tmp_path / "roster.csv").write_text("id,first_name,last_name,email,section,sis_id\n" + line + "\n",
                                         encoding="utf-8")
    from types import SimpleNamespace
    return roster.load(SimpleNamespace(root=str(tmp_path)))


@pytest.mark.parametrize("line, words", [
    ("j\u0430ne,Jane,Doe,jane@x.edu,,S1", "id 'jаne': it mixes Latin and Cyrillic letters (а is CYRILLIC SMALL LETTER A)"),
    ("=cmd,A,B,,,", "id '=cmd': it starts with ="),
    ("'-john@x.edu,J,D,,,", "hides"),
    ("bob,B,D,bob@x.edu,,;=1+2", "sis_id ';=1+2'"),
    ("bob,B,D,@SUM(1)@x.edu,,S2", "email '@SUM(1)@x.edu'"),
    ("bob\x1b[2J,B,D,,,", "\\x1b"),
])
def test_the_roster_refuses_an_id_it_cannot_write_with_one_line(tmp_path, line, words):
    with pytest.raises(CourseError) as err:
        _roster(tmp_path, line)
    said = str(err.value)
    assert said.startswith("roster.csv, line 2: ") and words in said and "\n" not in said and not _raw(said), said


def test_csv_exports_quote_text_guard_each_piece_and_keep_ids(tmp_path):
    reason = "…: ValueError: ;=1+2;@SUM(1+1);=cmd|' /C calc'!A0, -2+3,\t+4\n=5"
    path = untrusted.write_csv(str(tmp_path / "x.csv"), ["student", "score", "total", "reason"],
                             [{"student": "-john@x.edu", "score": 8.5, "total": "-0.5", "reason": reason},
                              {"student": "alice", "score": 0, "total": "", "reason": "=HYPERLINK(\"x\")"}],
                             ids=("student",))
    raw = open(path, encoding="utf-8", newline="").read()
    assert raw.startswith('"student","score","total","reason"\r\n"-john@x.edu",8.5,-0.5,"'), raw
    with open(path, newline="", encoding="utf-8") as fh:
        list(csv.reader(fh, quoting=csv.QUOTE_NONNUMERIC))           # every unquoted field is a number
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["student"] == "-john@x.edu" and rows[0]["total"] == "-0.5"
    assert rows[0]["reason"] == "…: ValueError: ;'=1+2;'@SUM(1+1);'=cmd|' /C calc'!A0, '-2+3,\t'+4\n'=5"
    assert rows[1]["reason"] == "'=HYPERLINK(\"x\")"
    # a signed number split off is read as that number: the grader's lists of numbers keep their signs
    listed = "got [1.5007, -2.7137, -0.3632, -inf], +1e-05), -2.5x, -1-1, -1+cmd|' /C calc'!A0"
    assert untrusted.cell(listed) == "got [1.5007, -2.7137, -0.3632, -inf], +1e-05), '-2.5x, '-1-1, '-1+cmd|' /C calc'!A0"
    assert untrusted.cell("-2.5, a") == "'-2.5, a"         # the field's start is always guarded
    # a number is left unguarded only up to the separator before it: a spreadsheet that does not
    # split at a different one (a newline, a bar, a comma where it is the decimal mark) would run
    # what follows it as the number's formula; and a quoted piece is guarded inside its quote
    for attack in ("x,-1\n*cmd|' /C calc'!A0,", "x;-1,5+cmd|' /C calc'!A0;", "x,-1)\n/A1", "x,+1e5\n^A1",
                   "x,-inf\n*A1", "x,-1|*A1", "x,-1\u2028*A1"):
        assert untrusted.cell(attack) == attack.replace(attack[1], attack[1] + "'", 1), attack
    assert untrusted.cell('a,"=cmd|x!A0"') == 'a,"\'=cmd|x!A0"'
    # inside a quoted piece nothing is split: a number there is no exception; signs and separators
    # that look like the ASCII ones are guarded as those are
    for attack in ('a,"-1,5+1"', 'a\n"-1\n*0+1"', "a,\u22121+1", "a,\ufe661+1", "a\u060c=1", "a\uff0c=1"):
        at = 2 + attack[2:3].startswith('"')
        assert untrusted.cell(attack) == attack[:at] + "'" + attack[at:], attack
    # the bar, Unicode line breaks and wide spaces before a piece, and full-width formula signs
    odd = "a|=1\u2028=2\u2029\u3000+A3;\u00a0@4,\uff1d5"
    untrusted.write_csv(str(tmp_path / "odd.csv"), ["reason"], [{"reason": odd}])
    with open(tmp_path / "odd.csv", newline="", encoding="utf-8") as fh:
        assert next(csv.DictReader(fh))["reason"] == "a|'=1\u2028'=2\u2029\u3000'+A3;\u00a0'@4,'\uff1d5"
    with pytest.raises(untrusted.UnsafeId, match="formula"):
        untrusted.write_csv(str(tmp_path / "x.csv"), ["student"], [{"student": "=1+2"}], ids=("student",))
    assert open(path, encoding="utf-8", newline="").read() == raw and not os.path.exists(path + ".tmp")


def test_the_lms_files_write_every_id_unchanged(course, tmp_path):
    """Canvas matches by SIS Login ID (the account) or SIS User ID, Moodle by e-mail or ID number:
    each exactly as the roster and the accounts hold it; names are text."""
    aid = course.assignments[0].id
    who = {"-john@x.edu": roster.Student("-john@x.edu", "=John", "-Doe", "-john@x.edu", "L01", "-S1x"),
           "alice": roster.Student("alice", "Alice", "Smith", "alice@x.edu", "L02", "S2")}
    canvas, moodle = lms.write(str(tmp_path), course, [{"student_id": s, aid: "8"} for s in who], who)
    with open(canvas, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    john = next(r for r in rows if r["SIS Login ID"] == "-john@x.edu")
    assert (john["SIS User ID"], john["Student"], john[aid]) == ("-S1x", "'-Doe, '=John", "8.00")
    with open(moodle, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    john = next(r for r in rows if r["Email address"] == "-john@x.edu")
    assert (john["ID number"], john["First name"], john["Last name"]) == ("-S1x", "'=John", "'-Doe")


def _record(student, **fields):
    part = PartResult("softmax", 0.0, 4.0, "error", "\x1b]0;pwned\x07 reason")
    return Submission(student, "attention", "attention.ipynb", parts=[part], grader="g", sha256="s",
                      suites={}, **fields)


def test_course_status_and_history_print_no_control_character(course, tmp_path, capsys):
    """Whatever a result holds (a record written by another grader, edited by hand), the course
    command prints it as text: every line it prints goes through one guard."""
    out = str(tmp_path)
    settings.write_course_folder(course, out)      # a grading folder: the only kind `course status` reads
    store.write_result(out, _record("alice", problem="grader error: \x1b[2J\x1b]52;c;cHduZWQ=\x07",
                                    graded_at="2026-12-01T10:00:00\x1b[8m"))
    assert cli.main(["--config", course.path, "status", out]) == 0
    said = capsys.readouterr().out
    assert "grader errors: 1" in said and "\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07" in said and not _raw(said), said
    assert cli.main(["--config", course.path, "history", "alice", "--dir", out]) == 0
    said = capsys.readouterr().out
    assert "2026-12-01T10:00:00\\x1b[8m" in said and not _raw(said), said


def test_a_reason_is_one_line_of_the_summary_whatever_it_holds():
    """A reason holding a newline would print a line of its own in `course grade`'s summary, one
    that looks like another student's: it is shown as \\x0a, on its student's line."""
    from autograder.report import terminal
    forged = "SyntaxError\n  - victim/attention: grader error: forged line"
    part = PartResult("softmax", 0.0, 4.0, "error", forged)
    record = Submission("mallory", "attention", "attention.ipynb", parts=[part])
    lines = terminal.summary([record, _record("bob", problem="not valid JSON\nforged too")]).splitlines()
    assert not [x for x in lines if x.startswith("  - victim")], lines
    assert "  - mallory/softmax: error: SyntaxError\\x0a  - victim/attention: grader error: forged line" in lines
    assert "  - bob/attention: not valid JSON\\x0aforged too" in lines

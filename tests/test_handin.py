"""The one reader of hand-ins (autograder/grade/handin.py): no link anywhere below its folder, regular
files only, bounded; and what collect copies of a hand-in."""

import os

import pytest

from autograder.grade import discovery, handin
from selfcheck.program import NotebookError


@pytest.fixture
def submitted(tmp_path):
    """``submitted/`` holding alice's notebook, and beside it ``solutions/`` holding the answer."""
    (tmp_path / "solutions" / "attention").mkdir(parents=True)
    (tmp_path / "solutions" / "attention" / "attention.ipynb").write_text("the answer")
    (tmp_path / "submitted" / "alice" / "attention").mkdir(parents=True)
    (tmp_path / "submitted" / "alice" / "attention" / "attention.ipynb").write_text("alice's")
    return tmp_path / "submitted"


def _read(submitted, student, limit=100):
    return handin.read(str(submitted), [student, "attention", "attention.ipynb"], limit)


def test_a_plain_hand_in_is_read(submitted):
    assert _read(submitted, "alice") == b"alice's"
    assert handin.read_submission(str(submitted / "alice" / "attention" / "attention.ipynb")) == b"alice's"


@pytest.mark.parametrize("where", ["student", "assignment", "notebook"])
def test_a_link_at_any_depth_is_refused(submitted, where):
    solutions = submitted.parent / "solutions"
    if where == "student":
        os.symlink(solutions, submitted / "mallory")
    else:
        (submitted / "mallory").mkdir()
        if where == "assignment":
            os.symlink(solutions / "attention", submitted / "mallory" / "attention")
        else:
            (submitted / "mallory" / "attention").mkdir()
            os.symlink(solutions / "attention" / "attention.ipynb",
                       submitted / "mallory" / "attention" / "attention.ipynb")
    with pytest.raises(handin.Refused, match="symbolic link"):
        _read(submitted, "mallory")
    with pytest.raises(NotebookError, match="symbolic link"):
        handin.read_submission(str(submitted / "mallory" / "attention" / "attention.ipynb"))


def test_a_fifo_or_a_device_is_never_opened_for_reading(submitted):
    folder = submitted / "alice" / "attention"
    os.remove(folder / "attention.ipynb")
    os.mkfifo(folder / "attention.ipynb")        # no writer: an open for reading would hang
    with pytest.raises(handin.Refused, match="not a regular file"):
        _read(submitted, "alice")
    os.remove(folder / "attention.ipynb")
    os.symlink("/dev/zero", folder / "attention.ipynb")
    with pytest.raises(handin.Refused, match="symbolic link"):
        _read(submitted, "alice")


def test_a_missing_notebook_and_a_large_one(submitted):
    with pytest.raises(handin.Missing):
        _read(submitted, "bob")
    assert _read(submitted, "alice", limit=3) == b"alic"        # limit + 1: the caller sees it is too large


def test_find_submissions_leaves_linked_folders_out(course, submitted):
    os.symlink(submitted.parent / "solutions", submitted / "mallory")
    (submitted / "eve").mkdir()
    os.symlink(submitted.parent / "solutions" / "attention", submitted / "eve" / "attention")
    refused = []
    found = discovery.find_submissions(course, str(submitted), refused)
    assert [task.key for task in found] == [("alice", "attention")]
    assert sorted(refused) == [("eve/attention", "a symbolic link, not a folder"),
                               ("mallory", "a symbolic link, not a folder")]


def test_a_hand_in_for_no_assignment_of_the_course_is_named_not_dropped(course, submitted):
    """A folder named after no assignment (a typo, another case, another course's) is listed as
    left out, with the assignments there are, rather than vanishing from every report."""
    (submitted / "alice" / "Attention").mkdir()
    (submitted / "ben" / "bogus_assignment").mkdir(parents=True)
    (submitted / "alice" / ".ipynb_checkpoints").mkdir()
    refused = []
    found = discovery.find_submissions(course, str(submitted), refused)
    assert [task.key for task in found] == [("alice", "attention")]
    ids = ", ".join(sorted(a.id for a in course.assignments))
    assert refused == [("alice/Attention", f"not an assignment of this course ({ids})"),
                       ("ben/bogus_assignment", f"not an assignment of this course ({ids})")]


def test_copy_keeps_only_what_the_release_declares(tmp_path):
    release = tmp_path / "release"
    (release / "selfcheck").mkdir(parents=True)
    for name in ("attention.ipynb", "test_softmax.py", "selfcheck/__init__.py"):
        (release / name).write_text("released")
    hand_in = tmp_path / "inbound" / "alice+attention"
    (hand_in / "selfcheck").mkdir(parents=True)
    (hand_in / "extra").mkdir()
    for name in ("attention.ipynb", "timestamp.txt", "notes.html", "selfcheck/__init__.py", "selfcheck/x.html",
                 "extra/y.py"):
        (hand_in / name).write_text("handed in")
    os.symlink(release / "test_softmax.py", hand_in / "test_softmax.py")
    dest = tmp_path / "submitted"
    with handin.folder(str(hand_in.parent), hand_in.name) as fd:
        assert handin.left_out(fd, handin.declared(str(release))) == [
            "extra", "extra/y.py", "notes.html", "selfcheck/x.html", "test_softmax.py"]
        left_out, why = handin.copy_folder(fd, str(dest), handin.declared(str(release)), 1000, [10_000])
    assert why is None
    assert sorted(os.path.relpath(os.path.join(top, f), dest) for top, _, files in os.walk(dest)
                  for f in files) == ["attention.ipynb", "selfcheck/__init__.py", "timestamp.txt"]
    assert dict(left_out) == {"extra/": "not part of the release", "notes.html": "not part of the release",
                              "selfcheck/x.html": "not part of the release",
                              "test_softmax.py": "a link or a special file"}

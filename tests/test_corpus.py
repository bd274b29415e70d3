"""The course side of the corpus (autograder/course/corpus.py): where it looks, the checksum, the download."""

import hashlib
import os
import types

import pytest

from autograder.course import corpus


def _course(root, trains=True):
    """A course of one assignment, which trains when its folder holds framework.py."""
    folder = root / "solutions" / "wa"
    folder.mkdir(parents=True)
    if trains:
        (folder / "framework.py").write_text("")
    return types.SimpleNamespace(root=str(root), assignments=[types.SimpleNamespace(id="wa")],
                                 source=lambda a, *names: os.path.join(root, "solutions", a.id, *names))


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No corpus anywhere: empty cwd and home, no network; returns (tmp_path, course, download calls)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TINYSHAKESPEARE", raising=False)
    calls = []

    def no_network(url, timeout):
        calls.append((url, timeout))
        raise OSError("network is unreachable")

    monkeypatch.setattr(corpus, "_download", no_network)
    return tmp_path, _course(tmp_path / "repo"), calls


def test_a_course_that_does_not_train_needs_no_corpus(tmp_path):
    assert corpus.find(_course(tmp_path, trains=False)) is None


def test_the_error_is_one_line_naming_every_place_and_the_fix(isolated):
    tmp_path, course, calls = isolated
    with pytest.raises(corpus.CorpusError) as error:
        corpus.find(course)
    message = str(error.value)
    assert "\n" not in message
    assert str(tmp_path / "tinyshakespeare.txt") not in message      # the current folder: never
    assert str(tmp_path / "repo" / "data" / "tinyshakespeare.txt") in message
    assert str(tmp_path / "shared" / "data" / "tinyshakespeare.txt") in message
    assert str(tmp_path / "home" / ".cache" / "attention-course" / "tinyshakespeare.txt") in message
    assert "TINYSHAKESPEARE" in message and "network is unreachable" in message
    assert calls and calls[0][0] == corpus.URL and calls[0][1] <= 30


def test_search_order_and_checksum(isolated, monkeypatch):
    tmp_path, course, calls = isolated
    good, bad = b"to be or not to be\n", b"something else\n"
    monkeypatch.setattr(corpus, "SHA256", hashlib.sha256(good).hexdigest())
    (tmp_path / "repo" / "data").mkdir()
    (tmp_path / "repo" / "data" / "tinyshakespeare.txt").write_bytes(good)
    (tmp_path / "repo" / "solutions" / "wa" / "tinyshakespeare.txt").write_bytes(bad)  # found first, wrong checksum
    assert corpus.find(course) == str(tmp_path / "repo" / "data" / "tinyshakespeare.txt")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_bytes(good)
    monkeypatch.setenv("TINYSHAKESPEARE", str(elsewhere))
    assert corpus.candidates(course)[0] == elsewhere
    assert corpus.find(course) == str(elsewhere)
    assert not calls


def test_beside_the_solution_and_beside_the_course(isolated, monkeypatch):
    tmp_path, course, calls = isolated
    good = b"from the repository\n"
    monkeypatch.setattr(corpus, "SHA256", hashlib.sha256(good).hexdigest())
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "shared" / "data" / "tinyshakespeare.txt").write_bytes(good)
    monkeypatch.chdir(tmp_path / "repo" / "solutions" / "wa")      # anywhere: the course knows its root
    assert corpus.find(course) == str(tmp_path / "shared" / "data" / "tinyshakespeare.txt")
    (tmp_path / "repo" / "solutions" / "wa" / "tinyshakespeare.txt").write_bytes(good)
    assert corpus.find(course) == str(tmp_path / "repo" / "solutions" / "wa" / "tinyshakespeare.txt")
    assert not calls


def test_a_download_is_checked_and_cached(isolated, monkeypatch):
    tmp_path, course, _ = isolated
    good = b"downloaded text\n"
    monkeypatch.setattr(corpus, "SHA256", hashlib.sha256(good).hexdigest())
    monkeypatch.setattr(corpus, "_download", lambda url, timeout: good)
    cached = tmp_path / "home" / ".cache" / "attention-course" / "tinyshakespeare.txt"
    assert corpus.find(course) == str(cached) and cached.read_bytes() == good
    monkeypatch.setattr(corpus, "_download", lambda url, timeout: pytest.fail("should use the cache"))
    assert corpus.find(course) == str(cached)
    monkeypatch.setattr(corpus, "SHA256", hashlib.sha256(b"other").hexdigest())
    with pytest.raises(corpus.CorpusError, match="wrong sha256"):
        corpus.find(course, download=False)


def test_the_current_folder_is_never_searched(isolated, monkeypatch):
    """Grading may run in a folder a student can write (their hand-in, their home): a corpus
    planted there, even one with the right checksum, is not the course's."""
    tmp_path, course, _ = isolated
    good = b"planted, with the right checksum\n"
    monkeypatch.setattr(corpus, "SHA256", hashlib.sha256(good).hexdigest())
    for place in (tmp_path / "tinyshakespeare.txt", tmp_path / "data" / "tinyshakespeare.txt",
                  tmp_path / ".." / "shared" / "data" / "tinyshakespeare.txt"):
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_bytes(good)
    with pytest.raises(corpus.CorpusError):
        corpus.find(course, download=False)


def test_grading_reads_a_private_copy_of_the_verified_bytes(isolated, monkeypatch):
    """What sandboxes get and the reference trains on is a copy of the bytes that were checked, in
    a folder only the grading account can change, read-only: swapping the file found afterwards
    changes nothing."""
    from autograder import sandbox
    tmp_path, course, _ = isolated
    good = b"the course's corpus\n"
    monkeypatch.setattr(corpus, "SHA256", hashlib.sha256(good).hexdigest())
    found = tmp_path / "repo" / "data" / "tinyshakespeare.txt"
    found.parent.mkdir()
    found.write_bytes(good)
    used = sandbox.corpus_path(course)
    assert used == corpus.private(course) != str(found)
    found.write_bytes(b"swapped in after the check\n")
    with open(used, "rb") as fh:
        assert fh.read() == good
    assert os.stat(used).st_mode & 0o777 == 0o444
    folder = os.stat(os.path.dirname(used))
    assert folder.st_uid == os.geteuid() and folder.st_mode & 0o777 == 0o755

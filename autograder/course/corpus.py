"""The training corpus (tinyshakespeare): found, checked and downloaded here, never committed.

The course side owns the search, because it knows the course's folders; the
framework shipped to students only reads the file it is given (or
``$TINYSHAKESPEARE``, or ``tinyshakespeare.txt`` beside the notebook). The search
never looks in the current folder, which may be a student's. Grading trains on
:func:`private`, a copy of the verified bytes where only the grading account can
write, bound read-only into every sandbox: a file checked in one place and then read
again from a folder others can write could be swapped in between.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.course.config import Assignment, Course

URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
NAME = "tinyshakespeare.txt"
CACHE = Path("~/.cache/attention-course") / NAME


class CorpusError(RuntimeError):
    """The corpus is needed and was not found; the message is one line: where we looked, what to do."""


def needs_corpus(course: Course, assignment: Assignment) -> bool:
    """Whether an assignment trains on the corpus (it ships the framework)."""
    return os.path.exists(course.source(assignment, "framework.py"))


def candidates(course: Course) -> list[Path]:
    """Where :func:`find` looks, in order, each place once."""
    places = [Path(os.environ["TINYSHAKESPEARE"]).expanduser()] if os.environ.get("TINYSHAKESPEARE") else []
    places += [Path(course.source(a, NAME)) for a in course.assignments if needs_corpus(course, a)]
    places += [Path(course.root) / "data" / NAME, Path(course.root) / ".." / "shared" / "data" / NAME]
    places.append(CACHE.expanduser())
    unique: list[Path] = []
    for place in places:        # ".." spelled out, and the first of two names for one file kept
        place = Path(os.path.normpath(place))
        if place.resolve() not in {q.resolve() for q in unique}:
            unique.append(place)
    return unique


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _download(url, timeout):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def find(course: Course, *, download: bool = True, timeout: float = 10.0) -> str | None:
    """The path (a string) of a verified corpus, or None when no assignment of ``course`` trains.

    Looks where :func:`candidates` says, skipping a file whose sha256 is wrong;
    with nothing found it downloads the char-rnn copy into the cache (when
    ``download`` and the network allow). Otherwise :class:`CorpusError`.
    """
    if not any(needs_corpus(course, a) for a in course.assignments):
        return None
    places = candidates(course)
    problems = []
    for place in places:
        if place.is_file():
            if _sha256(place.read_bytes()) == SHA256:
                return str(place)
            problems.append(f"{place} has the wrong sha256")
    if download:
        cache = CACHE.expanduser()
        try:
            raw = _download(URL, timeout)
            if _sha256(raw) != SHA256:
                raise ValueError("downloaded file has the wrong sha256")
            _private_folder(cache.parent)
            tmp = cache.with_suffix(".part")
            tmp.write_bytes(raw)
            tmp.replace(cache)
            return str(cache)
        except Exception as error:  # no network, proxy, bad file: all end in the message below
            problems.append(f"download from {URL} failed ({type(error).__name__}: {error})")
    extra = ("; " + "; ".join(problems)) if problems else ""
    raise CorpusError(f"tinyshakespeare not found (sha256 {SHA256[:12]}...): looked in "
                      f"{', '.join(str(p) for p in places)}{extra}. "
                      f"Fix: put {NAME} in data/ or set TINYSHAKESPEARE=/path/to/{NAME}.")


def _private_folder(folder):
    """``folder``, made when missing, this account's and ``0755``: only it can change what is in
    it, and a sandbox's user can read the corpus through it."""
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise CorpusError(f"{folder} is not a folder of this account's (owner uid {info.st_uid}): remove it")
    os.chmod(folder, 0o755)
    return folder


def private(course: Course) -> str | None:
    """The path of a verified copy of the corpus that only the grading account can change (the
    cache, written from the bytes :func:`find`'s file held when they were checked), read-only for
    everyone; None when no assignment trains. What grading reads and binds into sandboxes."""
    cache = CACHE.expanduser()
    _private_folder(cache.parent)
    with contextlib.suppress(OSError):
        fd = os.open(cache, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and _sha256(fh.read()) == SHA256:
                return str(cache)
    found = find(course)
    if found is None:
        return None
    raw = Path(found).read_bytes()
    if _sha256(raw) != SHA256:
        raise CorpusError(f"{found} changed while it was read: its sha256 is no longer {SHA256[:12]}...")
    tmp = cache.with_suffix(f".{os.getpid()}.part")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    tmp.write_bytes(raw)
    os.chmod(tmp, 0o444)
    tmp.replace(cache)
    return str(cache)

"""The training corpus (tinyshakespeare): found, checked and downloaded here, never committed.

The course side owns the search, because it knows the course's folders; the
framework shipped to students only reads the file it is given (or
``$TINYSHAKESPEARE``, or ``tinyshakespeare.txt`` beside the notebook). The
grader passes the path it found into every sandbox as ``$TINYSHAKESPEARE``.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.config import Assignment, Course

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
    here = Path.cwd()
    places.append(here / NAME)
    places += [Path(course.source(a, NAME)) for a in course.assignments if needs_corpus(course, a)]
    for base in (here, Path(course.root)):
        places += [base / "data" / NAME, base / ".." / "shared" / "data" / NAME]
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
            cache.parent.mkdir(parents=True, exist_ok=True)
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

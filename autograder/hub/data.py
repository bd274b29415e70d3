"""The course's data where every student's server reads it: students' servers run as the students,
who cannot enter the course folder, so the corpus the notebooks train on is copied, checked, into a
folder of root's in the course's environment, read-only for everyone, and each server is told
where (``$TINYSHAKESPEARE``, which the framework's ``load_corpus`` and the course's tools read)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from autograder.course import corpus
from autograder.course.config import Course


def share_corpus(course: Course, folder: str) -> dict[str, str]:
    """The environment a server needs to read the corpus: ``{"TINYSHAKESPEARE": path}`` for a
    verified copy in ``folder`` (made root's, 0755, the file 0444), or ``{}`` when no assignment of
    ``course`` trains. :class:`~autograder.course.corpus.CorpusError` (one line) when it is nowhere."""
    found = corpus.find(course)
    if found is None:
        return {}
    raw = Path(found).read_bytes()
    if hashlib.sha256(raw).hexdigest() != corpus.SHA256:
        raise corpus.CorpusError(f"{found} changed while it was read: its sha256 is no longer "
                                 f"{corpus.SHA256[:12]}...")
    os.makedirs(folder, mode=0o755, exist_ok=True)
    os.chown(folder, 0, 0)
    os.chmod(folder, 0o755)
    shared = os.path.join(folder, corpus.NAME)
    partial = f"{shared}.{os.getpid()}.part"
    with open(partial, "wb") as fh:
        fh.write(raw)
    os.chmod(partial, 0o444)
    os.replace(partial, shared)
    return {"TINYSHAKESPEARE": shared}

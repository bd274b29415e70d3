"""When a hand-in was handed in: a time its student cannot choose.

nbgrader takes a hand-in's time from its own ``timestamp.txt`` (or its folder's name), which
the student wrote and may rewrite: a hand-in dated 1970 would never be late, and one dated
``not a time`` stopped nbgrader's autograde for it. The course takes instead the time the
exchange last saw the hand-in change, :func:`seen`: the latest *ctime* of its folder and of
everything in it. The kernel sets an inode's ctime to the present on every change (a write, a
rename, a chmod, and ``utime`` itself, which sets the other two times), and no one but root can
set it back. So a student can make their hand-in later, never earlier, and a hand-in edited
after the deadline is late by that edit.

The time collect first saw a hand-in would be unforgeable too, but it depends on when collect
runs (a collect after the deadline would make every hand-in late) and needs a record of its
own. A ctime is kept only as long as the inode: restoring the exchange from a backup, or
moving it to another filesystem, makes every hand-in as late as the restore; collect first.

Collect writes that time into ``submitted/<student>/<assignment>/timestamp.txt`` in
nbgrader's format (:func:`write`), where nbgrader's autograde reads it into the gradebook
(and so ``grades.csv``) and its late penalty; :func:`read` gives it back to everything else.
"""

import contextlib
import datetime
import os
import stat

NAME = "timestamp.txt"
FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"       # as nbgrader's submit writes it, in UTC
MAX_ENTRIES = 10_000                      # a hand-in holding more files is not a hand-in
MAX_DEPTH = 32                            # nor one nesting folders deeper
MAX_BYTES = 200                           # of a timestamp.txt


def seen(path: str) -> datetime.datetime:
    """The time the exchange last saw the hand-in folder ``path`` change, in UTC without a
    time zone (as nbgrader keeps times). Links are never followed, and nothing is opened that
    could block; ValueError when ``path`` is not a folder, holds more than ``MAX_ENTRIES``
    entries or nests deeper than ``MAX_DEPTH``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise ValueError("it is not a folder") from None
    try:
        latest = _latest(fd, [MAX_ENTRIES], MAX_DEPTH)
    finally:
        os.close(fd)
    return datetime.datetime.fromtimestamp(latest / 1e9, datetime.timezone.utc).replace(tzinfo=None)


def _latest(fd, budget, depth):
    """The latest ctime (ns) of the folder open at ``fd`` and of everything in it."""
    if depth < 0:
        raise ValueError(f"it nests folders more than {MAX_DEPTH} deep")
    latest = os.fstat(fd).st_ctime_ns
    with os.scandir(fd) as entries:
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                raise ValueError(f"it holds more than {MAX_ENTRIES} files")
            try:
                info = entry.stat(follow_symlinks=False)
                latest = max(latest, info.st_ctime_ns)
                if not stat.S_ISDIR(info.st_mode):
                    continue
                sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK,
                              dir_fd=fd)
            except OSError:
                continue        # gone or swapped since the listing: its folder's ctime says when
            try:
                latest = max(latest, _latest(sub, budget, depth - 1))
            finally:
                os.close(sub)
    return latest


def write(folder: str, when: datetime.datetime) -> None:
    """Record ``when`` as the submission time of the collected submission in ``folder``."""
    path = os.path.join(folder, NAME)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(when.strftime(FORMAT))


def read(folder: str) -> datetime.datetime | None:
    """The submission time recorded in ``folder`` (a collected submission), in UTC without a
    time zone; None when there is none, or none nbgrader could read."""
    try:
        fd = os.open(os.path.join(folder, NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return parse(fh.read(MAX_BYTES + 1))


def parse(raw: bytes) -> datetime.datetime | None:
    """The time in a ``timestamp.txt``'s bytes, in UTC without a time zone; None when nbgrader
    could not read it (so no export takes a time the gradebook does not have)."""
    from nbgrader.utils import parse_utc
    text = raw.decode("utf-8", "replace").strip()
    if not text or len(raw) > MAX_BYTES:
        return None
    try:
        return parse_utc(text)
    except (ValueError, OverflowError, TypeError):
        return None


def normalised(raw: bytes) -> bytes | None:
    """A ``timestamp.txt``'s bytes as collect writes them, or None when they hold no time."""
    when = parse(raw)
    return None if when is None else when.strftime(FORMAT).encode()

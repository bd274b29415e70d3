"""When a hand-in was handed in: a time its student cannot choose.

nbgrader takes a hand-in's time from its own ``timestamp.txt`` (or its folder's name), which
the student wrote and may rewrite: a hand-in dated 1970 would never be late, and one dated
``not a time`` stopped nbgrader's autograde for it. The course takes instead the time the
exchange last saw the hand-in change, :func:`seen`: the latest *ctime* of its folder and of
everything in it. The kernel sets an inode's ctime to the present on every change (a write, a
rename, a chmod, and ``utime`` itself, which sets the other two times), and no one but root can
set it back. So a student can make their hand-in later, never earlier, and a hand-in edited
after the deadline is late by that edit.

That holds on a filesystem that stamps a write made through a shared mapping (``mmap``): a
disk or network filesystem (:data:`STAMPED`) writes a dirty page back within about 30 s and
write-protects it again, so the next write through the mapping sets the ctime. tmpfs keeps its
pages in memory and never asks again: a student who mapped their notebook before the deadline
writes through it after the deadline, and the hand-in keeps its on-time ctime. So the exchange
must not be on one (:func:`ctime_problem`; ``course exchange`` and collect say so).

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
import re
import stat

NAME = "timestamp.txt"
FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"       # as nbgrader's submit writes it, in UTC
MAX_ENTRIES = 10_000                      # a hand-in holding more files is not a hand-in
MAX_DEPTH = 32                            # nor one nesting folders deeper
MAX_BYTES = 200                           # of a timestamp.txt


# filesystems whose ctime a write through a shared mapping sets (page_mkwrite), each page again
# once it has been written back: a hand-in changed after the deadline is late within ~30 s
STAMPED = ("ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "nfs", "nfs4", "ceph", "gfs2")
# in memory: a page once written through a mapping stays writable, and no later write there sets ctime
UNSTAMPED = ("tmpfs", "ramfs", "devtmpfs", "shm")
MOUNTINFO = "/proc/self/mountinfo"
_TRUSTED = "ext4, xfs, btrfs or NFS"


def _unescaped(field: str) -> str:
    """A path of mountinfo's, its space, tab, newline and backslash written back (``\\040``)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def filesystem(path: str) -> str:
    """The type of the filesystem ``path`` is on (or would be made on), as this process sees its
    mounts: the mount of its device, else the one whose folder holds it most closely; an overlay's
    upper layer, where a write lands, when that is visible here. "" when there is no telling."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="replace") as fh:
            mounts = [line.split() for line in fh]
        info = os.stat(path)
    except OSError:
        return ""
    dev = f"{os.major(info.st_dev)}:{os.minor(info.st_dev)}"
    real = os.path.realpath(path)
    found: dict[str, tuple[str, str]] = {}          # device or folder -> (type, options)
    for fields in mounts:
        if "-" not in fields[6:] or len(fields) < fields.index("-") + 4:
            continue
        dash = fields.index("-")
        point, kind, options = _unescaped(fields[4]), fields[dash + 1], fields[dash + 3]
        found[fields[2]] = (kind, options)          # a later mount hides an earlier one
        if real == point or real.startswith(point.rstrip("/") + "/"):
            found[point] = (kind, options)
    holders = sorted((p for p in found if p.startswith("/")), key=len)
    kind, options = found.get(dev) or (found[holders[-1]] if holders else ("", ""))
    if kind == "overlay":
        upper = dict(o.partition("=")[::2] for o in options.split(",")).get("upperdir")
        return filesystem(upper) if upper and os.path.isdir(upper) else kind
    return kind


def ctime_problem(path: str) -> str | None:
    """Why hand-ins kept at ``path`` cannot be timed by their ctimes: their filesystem never
    records a write made through a memory mapping (:data:`UNSTAMPED`); None otherwise."""
    kind = filesystem(path)
    if kind not in UNSTAMPED:
        return None
    return (f"{path} is on {kind}, which never records a write made through a memory mapping: a "
            f"hand-in changed that way after the deadline keeps its on-time time; put the exchange on "
            f"a disk or network filesystem ({_TRUSTED})")


def ctime_doubt(path: str) -> str | None:
    """Why the ctimes at ``path`` may not time hand-ins: its filesystem is neither known to record a
    write made through a memory mapping (:data:`STAMPED`) nor known not to; None when it is known."""
    kind = filesystem(path)
    if kind in STAMPED or kind in UNSTAMPED:
        return None
    return (f"{path} is on {kind or 'a filesystem this machine does not name'}, which the course does not "
            f"know to record a write made through a memory mapping in a hand-in's time ({_TRUSTED} do)")


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

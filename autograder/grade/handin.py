"""Reading a student's hand-in: one component at a time, never through a link.

A hand-in lies below a folder the course keeps them in (``submitted/``, ``autograded/``, the
exchange's ``inbound/``), laid out ``<folder>/<student>/<assignment>/<file>``. The folder is the
course's and is trusted; everything below it was made by or for a student, so any component
there may be a symbolic link (to the solutions, to another student's work, to ``/dev/zero``), a
FIFO that never answers or a device. Every path that reads a hand-in reads it here: each
component is opened relative to the one above it, ``O_NOFOLLOW``, so a link anywhere below the
folder is refused and never followed; a file is read only when ``fstat`` on the open descriptor
says it is a regular file (opened ``O_NONBLOCK``, so a FIFO cannot hang the open), and never
more than a bound.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

from autograder.course.private import account
from autograder.grade import submission_time
from selfcheck.program import MAX_NOTEBOOK_BYTES, NotebookError

_BASE = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FOLDER = _BASE | os.O_NOFOLLOW
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Refused(Exception):
    """A hand-in, or a file of one, that is not read; the message says why, in the student's terms."""


class Missing(Refused):
    """The file or folder is not there at all."""


class NotTheirs(Refused):
    """A file or folder in a hand-in that another account made (nbgrader's submit leaves a
    hand-in's folder writable by every account)."""


def _check_owner(fd: int, owner: int | None) -> None:
    """NotTheirs (its message: whose it is) when ``owner`` is given and does not own the file open at ``fd``."""
    uid = os.fstat(fd).st_uid
    if owner is not None and uid != owner:
        raise NotTheirs(f"owned by {account(uid)}, not by {account(owner)}")


def _check_name(name):
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name:
        raise Refused(f"{name!r} is not the name of a file")


def _why(fd, name, shown, wanted):
    """Why ``name`` (in the folder open at ``fd``) could not be opened as a ``wanted``."""
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return Missing(f"{shown} is not there")
    except OSError as exc:
        return Refused(f"{shown} could not be read ({exc.strerror})")
    if stat.S_ISLNK(mode):
        return Refused(f"{shown} is a symbolic link, not a {wanted}: hand in the {wanted} itself")
    return Refused(f"{shown} is not a {wanted}")


def _open(fd, name, flags, shown, wanted):
    _check_name(name)
    try:
        return os.open(name, flags, dir_fd=fd)
    except OSError:
        raise _why(fd, name, shown, wanted) from None


@contextlib.contextmanager
def folder(base: str, *names: str) -> Iterator[int]:
    """The descriptor of the folder ``base/names...``, every name a real folder, never a link."""
    fd = os.open(base, _BASE)
    try:
        for depth, name in enumerate(names, 1):
            sub = _open(fd, name, _FOLDER, "/".join(names[:depth]), "folder")
            os.close(fd)
            fd = sub
        yield fd
    finally:
        os.close(fd)


def read_at(fd: int, name: str, limit: int, shown: str | None = None, owner: int | None = None) -> bytes:
    """The bytes of the regular file ``name`` in the folder open at ``fd``: at most ``limit + 1``,
    so that the caller can tell a file that is too large. With ``owner``, NotTheirs when another
    account owns it."""
    handle = _open(fd, name, _FILE, shown or name, "file")
    with os.fdopen(handle, "rb") as fh:
        try:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise Refused(f"{shown or name} is not a regular file")
            _check_owner(fh.fileno(), owner)
            return fh.read(limit + 1)
        except OSError as exc:
            raise Refused(f"{shown or name} could not be read ({exc.strerror})") from None


def read(base: str, names: Sequence[str], limit: int) -> bytes:
    """The bytes of the regular file ``base/names...`` (see :func:`read_at`)."""
    *folders, name = names
    with folder(base, *folders) as fd:
        return read_at(fd, name, limit, "/".join(names))


def read_path(path: str, limit: int) -> bytes:
    """A hand-in's file by its path, ``<folder>/<student>/<assignment>/<file>``: the folder is
    trusted, the three components below it are read as :func:`read` reads them."""
    path = os.path.abspath(path)
    names: list[str] = []
    for _ in range(3):
        path, name = os.path.split(path)
        if name:
            names.insert(0, name)
    return read(path, names, limit)


def read_submission(path: str) -> bytes:
    """A submitted notebook's bytes by its path (:func:`read_path`), never more than the largest
    notebook grading reads: NotebookError with the reason, in the student's terms, otherwise."""
    try:
        return read_path(path, MAX_NOTEBOOK_BYTES)
    except Missing:
        raise NotebookError("there is no notebook in this submission") from None
    except Refused as exc:
        raise NotebookError(str(exc)) from None


def entries(fd: int, shown: str | None = None) -> dict[str, str]:
    """``{name: kind}`` of the folder open at ``fd``; kind is folder, file, link or other (never
    followed). Refused when the folder cannot be listed, or one of its entries looked at (a folder
    its student made unsearchable, an entry gone while it was listed)."""
    found: dict[str, str] = {}
    try:
        for entry in os.scandir(fd):
            mode = os.stat(entry.name, dir_fd=fd, follow_symlinks=False).st_mode
            found[entry.name] = ("folder" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode)
                                 else "link" if stat.S_ISLNK(mode) else "other")
    except OSError as exc:
        raise Refused(f"{shown or 'the folder'} could not be listed ({exc.strerror})") from None
    return found


def listing(fd: int, prefix: str = "") -> dict[str, str]:
    """``{path: kind}`` of everything below the folder open at ``fd`` (links are not descended)."""
    found: dict[str, str] = {}
    for name, kind in entries(fd, prefix.rstrip("/")).items():
        found[prefix + name] = kind
        if kind == "folder":
            try:
                sub = _open(fd, name, _FOLDER, prefix + name, "folder")
            except Refused:
                continue
            try:
                found.update(listing(sub, prefix + name + "/"))
            finally:
                os.close(sub)
    return found


def left_out(fd: int, keep: Collection[str]) -> list[str]:
    """The paths below the folder open at ``fd`` that a copy keeping ``keep`` leaves out: those
    neither in ``keep`` nor a folder of it, and whatever is not a regular file or a folder."""
    folders = {os.path.dirname(path) for path in keep}
    return sorted(path for path, kind in listing(fd).items()
                  if kind not in ("file", "folder")
                  or (path not in keep and not (kind == "folder" and path in folders)))


# written by nbgrader into every hand-in (submit, then collect): nbgrader needs them downstream
SECRET = "submission_secret.txt"
EXCHANGE_FILES = (submission_time.NAME, SECRET)
MAX_EXCHANGE_FILE = 200
SECRET_HEX = 128                          # secrets.token_hex(64), as nbgrader 0.9.6's submit writes it


def secret_problem(secret: bytes | None) -> str | None:
    """Why ``secret`` (a hand-in's submission_secret.txt) is not the token nbgrader's submit
    writes (``SECRET_HEX`` lowercase hex digits), or None. Its released feedback page is named
    by it alone, so anything else could be chosen to land on a classmate's page."""
    if not secret:
        return "is empty"
    if not re.fullmatch(rb"[0-9a-f]{%d}" % SECRET_HEX, secret):
        return f"is not the {SECRET_HEX} hex digits nbgrader's submit writes"
    return None


def declared(release: str) -> set[str]:
    """The files a hand-in of the assignment released in ``release`` may carry: the relative path
    of every file of the release (the notebook, its support files), and the two nbgrader's exchange
    adds: the timestamp, and the secret that names the hand-in's feedback (release_feedback reads it)."""
    found = set(EXCHANGE_FILES)
    for top, dirs, files in os.walk(release):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found.update(os.path.relpath(os.path.join(top, f), release) for f in files)
    return found


def copy_folder(fd: int, dest: str, keep: Collection[str], max_file: int, budget: list[int],
                ignore: Callable[[str, list[str]], Iterable[str]] | None = None,
                prefix: str = "", owner: int | None = None) -> tuple[list[tuple[str, str]], str | None]:
    """Copy the hand-in folder open at ``fd`` into ``dest``: only the regular files whose path
    is in ``keep``, each at most ``max_file`` bytes, all together at most ``budget[0]`` bytes;
    with ``owner``, only the files and folders that account owns (a classmate's are left out).

    Returns ``(left out, refusal)``: ``[(path, why)]`` of what was not copied, and why the whole
    hand-in must be refused (a file swapped for something else while it was read, too large
    altogether), or None."""
    os.makedirs(dest, exist_ok=True)
    left_out: list[tuple[str, str]] = []
    try:
        found = entries(fd, prefix.rstrip("/"))
    except Refused as exc:
        return left_out, str(exc)
    skipped = set(ignore(dest, list(found))) if ignore else set()
    for name, kind in sorted(found.items()):
        path = prefix + name
        if name in skipped:
            continue
        if kind == "folder":
            if not any(k.startswith(path + "/") for k in keep):
                left_out.append((path + "/", "not part of the release"))
                continue
            try:
                sub = _open(fd, name, _FOLDER, path, "folder")
            except Refused as exc:
                return left_out, str(exc)
            try:
                _check_owner(sub, owner)
            except NotTheirs as exc:
                os.close(sub)
                left_out.append((path + "/", str(exc)))
                continue
            try:
                more, why = copy_folder(sub, os.path.join(dest, name), keep, max_file, budget, ignore,
                                        path + "/", owner)
            finally:
                os.close(sub)
            left_out += more
            if why:
                return left_out, why
        elif kind != "file":
            left_out.append((path, "a link or a special file"))
        elif path not in keep:
            left_out.append((path, "not part of the release"))
        else:
            try:
                data = read_at(fd, name, max_file, path, owner)
            except NotTheirs as exc:
                left_out.append((path, str(exc)))
                continue
            except Refused as exc:
                return left_out, str(exc)
            if len(data) > max_file:
                left_out.append((path, f"larger than {max_file} bytes"))
                continue
            budget[0] -= len(data)
            if budget[0] < 0:
                return left_out, "the hand-in is larger than the course allows"
            with open(os.path.join(dest, name), "wb") as out:
                out.write(data)
    return left_out, None

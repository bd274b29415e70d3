"""Where grading keeps what it found, in a grading folder ``out``.

``results/<student>/<assignment>.json`` holds a submission's latest record, the records it
replaced stay in ``results/<student>/history/`` (named by what produced them), and
``results/.batch.json`` is the journal of the last batch: where its submissions came from and
whether it finished. Only the main process of a batch writes here (the workers just grade), and
every file is written beside itself and renamed into place (:func:`replacing`), so a reader
never sees half a file and an interrupted batch leaves every finished result whole.
"""

import contextlib
import dataclasses
import datetime
import gc
import glob
import hashlib
import json
import os
from collections.abc import Iterator
from typing import IO, Any

from autograder.records.results import Submission

JOURNAL = ".batch.json"     # a dot name: no student id can be it
SUMMARIES = ".summaries.json"   # every record without its checks, for `course status`


@contextlib.contextmanager
def replacing(path: str, **open_args: Any) -> Iterator[IO[str]]:
    """A text file to write ``path`` through: written as ``path.tmp``, renamed over ``path``
    once complete (``open_args`` as :func:`open` takes them)."""
    try:
        with open(path + ".tmp", "w", **open_args) as fh:
            yield fh
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(path + ".tmp")
        raise
    os.replace(path + ".tmp", path)


def now() -> str:
    """The time a record or the journal says: UTC, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def result_path(out: str, student: str, assignment: str) -> str:
    return os.path.join(out, "results", student, f"{assignment}.json")


def history_folder(out: str, student: str) -> str:
    return os.path.join(out, "results", student, "history")


def versions_key(record: Submission) -> str:
    """The short name of what produced a record: notebook, grader, suites and late penalty."""
    suites_now = record.suites or {p.part: p.suite for p in record.parts}
    joined = ",".join(f"{k}={v}" for k, v in sorted(suites_now.items()))
    name = (f"{(record.sha256 or 'nofile')[:8]}.{record.grader or 'nograder'}."
            f"{hashlib.sha256(joined.encode()).hexdigest()[:12]}")
    if record.late:         # one kept per late penalty it had
        name += "." + hashlib.sha256(json.dumps(dataclasses.asdict(record.late), sort_keys=True).encode()).hexdigest()[:8]
    if record.exported_at:  # and per export that changed what it shows (a hand grade, a penalty)
        name += "." + hashlib.sha256(f"{record.exported_at} {record.by_hand}".encode()).hexdigest()[:8]
    return name


def _load(path: str) -> Submission | None:
    """The record in a results file, or None when there is none or it cannot be read."""
    try:
        with open(path) as fh:
            return Submission.from_json(json.load(fh))
    except (OSError, ValueError):
        return None


def _dump(path: str, record: Submission) -> None:
    with replacing(path) as fh:
        json.dump(record.to_json(), fh, indent=1)


def read_result(out: str, student: str, assignment: str) -> Submission | None:
    """The latest result of one submission, or None."""
    return _load(result_path(out, student, assignment))


def history(out: str, student: str, assignment: str) -> list[Submission]:
    """Every earlier result of one submission, oldest first."""
    paths = glob.glob(os.path.join(history_folder(out, student), f"{glob.escape(assignment)}.*.json"))
    found = [(r.graded_at or "", os.path.getmtime(p), r) for p in paths if (r := _load(p)) is not None]
    return [r for *_, r in sorted(found, key=lambda t: t[:2])]     # a late penalty changes, not the time graded


def write_result(out: str, record: Submission, keep_replaced: bool = True) -> None:
    """Write a result; the one it replaces is kept under history/, named by its versions (unless
    not ``keep_replaced``: it never reached an export, and this one is the same grading)."""
    path = result_path(out, record.student, record.assignment)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = read_result(out, record.student, record.assignment) if keep_replaced else None
    if old is not None:
        folder = history_folder(out, record.student)
        os.makedirs(folder, exist_ok=True)
        _dump(os.path.join(folder, f"{record.assignment}.{versions_key(old)}.json"), old)
    _dump(path, record)


def load_results(out: str, kept: dict[str, tuple[list[int] | None, Submission]] | None = None,
                 collector_off: bool = True) -> list[Submission]:
    """The latest result of every submission graded into ``out``. ``kept`` ({path: (its file's
    version, record)}) holds records read before, each not read again while its file is unchanged,
    and takes every one read now (``course grade`` reads a term's while students' code runs, then
    only the files the batch wrote). Python's collector is off while they are read (unless not
    ``collector_off``: a thread beside processes being forked must not turn it off for them):
    records hold no cycles, and every pass of it over a term's thousands of new objects made the
    reading grow faster than the term."""
    paths = sorted(glob.glob(os.path.join(out, "results", "*", "*.json")))
    enabled = gc.isenabled()
    if collector_off:
        gc.disable()
    try:
        if kept is None:
            return [r for r in map(_load, paths) if r is not None]
        found = []
        for path in paths:
            seen = version(path)        # before the read: a file replaced meanwhile is read again next time
            entry = kept.get(path)
            if entry is None or seen is None or entry[0] != seen:
                record = _load(path)
                if record is None:
                    continue
                kept[path] = entry = (seen, record)
            found.append(entry[1])
        return found
    finally:
        if enabled:
            gc.enable()


def version(path: str) -> list[int] | None:
    """A file's version: device, inode, size, modification and change times (a write changes the
    last two, and nothing sets the change time back), or None when there is no file."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def kept(out: str, name: str) -> dict[str, Any]:
    """The cache ``results/<name>`` of ``out`` ({} when there is none or it cannot be read)."""
    try:
        with open(os.path.join(out, "results", name), encoding="utf-8") as fh:
            found = json.load(fh)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def keep(out: str, name: str, data: dict[str, Any]) -> None:
    """Write the cache ``results/<name>``; a folder that cannot take it keeps none."""
    with contextlib.suppress(OSError):
        with replacing(os.path.join(out, "results", name), encoding="utf-8") as fh:
            fh.write(json.dumps(data, separators=(",", ":")))     # the C encoder: json.dump is not it


def _summary(record: Submission) -> dict:
    data = record.to_json()
    for part in data["parts"]:
        part["checks"] = []
    return data


def load_summaries(out: str) -> list[Submission]:
    """The latest result of every submission graded into ``out``, each without its checks (what
    `course status` reads): each results file read again only when its version changed since the
    last time it was read or exported (``results/.summaries.json``), the others read from there."""
    before, now, found = kept(out, SUMMARIES), {}, []
    start = len(os.path.join(out, ""))      # each path below is out's own: its name is the rest (no relpath)
    for path in sorted(glob.glob(os.path.join(out, "results", "*", "*.json"))):
        name, seen = path[start:], version(path)
        entry = before.get(name)
        if entry is None or entry[0] != seen:
            record = _load(path)
            if record is None:
                continue
            entry = [seen, _summary(record)]
        now[name] = entry
        found.append(Submission.from_json(entry[1]))
    if now != before:
        keep(out, SUMMARIES, now)
    return found


def keep_summaries(out: str, records: list[Submission]) -> None:
    """Keep ``records``, every current one of ``out`` as its results files hold them (an export's),
    for :func:`load_summaries` (one whose file is as kept already is not summarised again)."""
    before, now, start = kept(out, SUMMARIES), {}, len(os.path.join(out, ""))
    for record in records:
        path = result_path(out, record.student, record.assignment)
        name, seen = path[start:], version(path)
        entry = before.get(name)
        now[name] = entry if entry is not None and entry[0] == seen else [seen, _summary(record)]
    if now != before:
        keep(out, SUMMARIES, now)


def _write_journal(out: str, data: dict[str, Any]) -> None:
    path = os.path.join(out, "results", JOURNAL)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with replacing(path) as fh:
        json.dump(data, fh, indent=1)


def read_journal(out: str) -> dict[str, Any]:
    """The last batch's journal (where its submissions came from, whether it finished), or {}."""
    try:
        with open(os.path.join(out, "results", JOURNAL)) as fh:
            journal: dict[str, Any] = json.load(fh)
            return journal
    except (OSError, ValueError):
        return {}


def batch_started(out: str, submitted: str | None, total: int, to_grade: int,
                  forced_since: str | None = None) -> None:
    """Journal a batch of ``total`` submissions from ``submitted``, ``to_grade`` of them to grade now;
    ``forced_since``: it grades again every record older than that (a forced batch, or the rest of
    an interrupted one)."""
    _write_journal(out, {"submitted": os.path.abspath(submitted) if submitted else None, "started": now(),
                         "total": total, "to_grade": to_grade, "finished": False,
                         "forced_since": forced_since})


def batch_finished(out: str) -> None:
    """Journal that the batch finished: nothing is left for ``--resume``."""
    journal = read_journal(out)
    journal["finished"] = True
    _write_journal(out, journal)

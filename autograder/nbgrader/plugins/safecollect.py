""":class:`SafeCollect` copies what students put in the exchange's inbound
folder through autograder/grade/handin.py, never following a symbolic link
(nbgrader's copy follows them, so a link to the solutions would be collected
as a file with their text) and taking only the files the release declares
(a handed-in ``notes.html`` would be served by formgrader as a page), and
refuses a hand-in whose folder belongs neither to the student it
names nor to the instructor collecting (nbgrader only warns): a student who
submits as someone else is left out, and that student's own latest hand-in
is collected instead. Inside a hand-in it takes only what the folder's owner made:
nbgrader's submit leaves the folder writable by every account, so a classmate who learns its
name may add or replace files there, and those are left out, named (the course's settings for
students, deploy/jupyter/course/, make hand-ins private instead; collect says how many were
not). A hand-in carrying the submission secret of another student's earlier hand-in is refused
too, naming both: release_feedback names a feedback page by that secret alone, so a copied
secret would put one student's feedback in the place of the other's. A hand-in it cannot collect (a name nbgrader cannot
parse, a file, a link) is left out with a warning, never stopping the
others; its time is the one the exchange saw (:mod:`autograder.grade.submission_time`),
never the one the student wrote. Every name it logs shows its control characters as
escapes (:func:`autograder.untrusted.guard_logging`), and a hand-in whose name holds
any, or whose random end is not the one nbgrader's submit writes, is left out.
"""

import contextlib
import glob
import logging
import os
import pwd
import re
import shutil
import stat
import datetime

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import check_mode, parse_utc

from autograder import untrusted
from autograder.grade import handin, submission_time


_RANDOM = re.compile(r"[A-Za-z0-9_-]{1,64}")    # nbgrader's submit: 9 random bytes, URL-safe base64


class SafeCollect(ExchangeCollect):
    """nbgrader's collect, for an inbound folder where every account may put anything: a hand-in
    that cannot be collected is left out with a warning naming it, links are never followed,
    a hand-in under another's name is refused, and each hand-in's time is the exchange's."""

    def _record(self, path: str) -> dict:
        """nbgrader's record of a hand-in (``username``, ``filename``, ``timestamp``), with the
        time the exchange saw it (:func:`autograder.grade.submission_time.seen`) rather than the one
        its student wrote; ValueError saying why it cannot be collected."""
        name = os.path.basename(path)
        fields = name.rsplit("+", 3)
        if len(fields) == 4 and not _RANDOM.fullmatch(fields[3]):
            raise ValueError(f"the random end of its name, {fields[3]!r}, is not the letters, digits, "
                             "- and _ nbgrader's submit writes")
        if len(fields) < 3 or fields[1] != self.coursedir.assignment_id or not name.isprintable():
            raise ValueError("its name is not <student>+<assignment>+<time>+<random>, as nbgrader's "
                             "submit makes it")
        username = fields[0]
        if username in ("", ".", "..") or set(username) & set("*+") or not username.isprintable():
            raise ValueError(f"{username!r} is not a student id nbgrader's submit would write")
        why = untrusted.student_id_problem(username)
        if why:
            raise ValueError(f"{username!r} is {why}")
        try:
            parse_utc(fields[2])
        except (ValueError, OverflowError, TypeError):
            raise ValueError(f"the time in its name, {fields[2]!r}, is not a time") from None
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            raise ValueError("it is a symbolic link")
        why = self._refusal_of(info.st_uid, username)
        if why:
            raise ValueError(why)
        return {"username": username, "filename": name, "timestamp": submission_time.seen(path)}

    def init_src(self) -> None:
        """nbgrader's init_src (0.9.6) on :meth:`_record`'s records: each student's latest
        hand-in, or their latest before the due date with ``--before-duedate``, by the
        exchange's times. nbgrader's stops at the first name it cannot parse, so any account
        could stop the class's collect."""
        untrusted.guard_logging()       # names and files chosen by students, shown as text
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.course_path = os.path.join(self.root, self.coursedir.course_id)
        self.inbound_path = os.path.join(self.course_path, "inbound")
        if not os.path.isdir(self.inbound_path):
            self.fail(f"Course not found: {self.inbound_path}")
        if not check_mode(self.inbound_path, read=True, execute=True):
            self.fail(f"You don't have read permissions for the directory: {self.inbound_path}")
        why = submission_time.ctime_problem(self.inbound_path) or submission_time.ctime_doubt(self.inbound_path)
        if why:
            self.log.warning("The hand-ins' times may be too early: %s", why)
        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                self.duedate = gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                self.duedate = None
        pattern = os.path.join(glob.escape(self.inbound_path), f"{self.coursedir.student_id or '*'}+"
                                                             f"{glob.escape(self.coursedir.assignment_id)}+*")
        accepted: dict[str, list[dict]] = {}
        for path in sorted(glob.glob(pattern)):
            try:
                record = self._record(path)
            except (ValueError, OSError) as exc:
                self.log.warning("Not collecting %r: %s", path, exc)
                continue
            accepted.setdefault(record["username"], []).append(record)
        self._refuse_borrowed_secrets(accepted)
        self.src_records = []
        for records in accepted.values():
            records = self._sort_by_timestamp(records)
            if self.duedate is not None and self.before_duedate:
                records = [r for r in records if r["timestamp"] <= self.duedate] or records
            self.src_records.append(records[0])

    def _refuse_borrowed_secrets(self, accepted: dict[str, list[dict]]) -> None:
        """Leave out of ``accepted`` every hand-in whose submission secret another student's
        hand-in (in the exchange or already collected) carried first, by the exchange's times.
        The secret is made at submit and kept in the student's home, so a second student can
        only have it by copying it; the earlier hand-in is the original, and stays."""
        carried: list[tuple[datetime.datetime, str, str, dict | None]] = []   # (time, student, hand-in or collected, record)
        for student, records in accepted.items():
            carried += [(rec["timestamp"], student, os.path.join(self.inbound_path, rec["filename"]), rec)
                        for rec in records]
        pattern = self.coursedir.format_path(self.coursedir.submitted_directory, "*", self.coursedir.assignment_id)
        for dest in glob.glob(pattern):
            when = submission_time.read(dest)
            if when is not None:
                carried.append((when, os.path.basename(os.path.dirname(dest)), dest, None))
        first: dict[bytes, tuple[str, str]] = {}
        for _, student, path, rec in sorted(carried, key=lambda c: c[:2]):
            secret = _secret(path)
            if secret is None:
                continue
            owner, original = first.setdefault(secret, (student, path))
            if owner != student and rec is not None:
                self.log.warning("Not collecting %r: its submission secret is the one %s's hand-in %r "
                                 "carries; a copied secret would put %s's feedback in the place of %s's",
                                 path, owner, original, student, owner)
                accepted[student].remove(rec)
        for student in [s for s, records in accepted.items() if not records]:
            del accepted[student]

    def copy_files(self) -> None:
        """nbgrader's copy_files (0.9.6), deciding by the exchange's times, and recording the
        time in the collected submission's ``timestamp.txt``, where autograde reads it: the
        hand-in's latest ctime once it is copied, so a change made while it was copied counts."""
        aid, course_id = self.coursedir.assignment_id, self.coursedir.course_id
        if not self.src_records:
            self.log.warning("No submissions of '%s' for course '%s' to collect", aid, course_id)
        else:
            self.log.info("Processing %d submissions of '%s' for course '%s'", len(self.src_records), aid,
                          course_id)
        self._replaced: dict[str, set[str]] = {}    # a support file of the release -> who handed in a copy
        self._open_to_all: set[str] = set()         # students whose hand-in every account may change
        for rec in self.src_records:
            student, src = rec["username"], os.path.join(self.inbound_path, rec["filename"])
            dest = self.coursedir.format_path(self.coursedir.submitted_directory, student, aid)
            if os.path.isdir(dest):
                existing = submission_time.read(dest)
                newer = existing is None or rec["timestamp"] > existing
                if not (self.update and newer) and not (self.before_duedate and existing != rec["timestamp"]):
                    self.log.info("No newer submission to collect: %s %s" if self.update else
                                  "Submission already exists, use --update to update: %s %s", student, aid)
                    continue
                self.log.info("Updating submission: %s %s", student, aid)
                shutil.rmtree(dest)
            else:
                self.log.info("Collecting submission: %s %s", student, aid)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            self.do_copy(src, dest)
            if not os.path.isdir(dest):
                continue                # refused, and said why
            try:
                when = max(rec["timestamp"], submission_time.seen(src))
            except (ValueError, OSError) as exc:
                self.log.warning("Not collecting %r: %s", src, exc)
                shutil.rmtree(dest)
                continue
            submission_time.write(dest, when)
        if self._replaced:
            everyone = set().union(*self._replaced.values())
            self.log.info("%d hand-in%s carried their own copy of the release's %s, as fetched; the "
                          "release's copy is collected in its place", len(everyone), "" if len(everyone) == 1
                          else "s", ", ".join(sorted(self._replaced)))
        if self._open_to_all:
            self.log.warning("%d hand-in%s could be changed by every account, as nbgrader's submit leaves a "
                             "hand-in: a classmate who learns its name may read it, take files out or make it "
                             "late (their own files are left out); the course's nbgrader configuration for "
                             "students (deploy/jupyter/course/nbgrader_config.py) makes each hand-in private",
                             len(self._open_to_all), "" if len(self._open_to_all) == 1 else "s")

    def do_copy(self, src: str, dest: str, log: logging.Logger | None = None) -> None:
        """Copy a hand-in through autograder/grade/handin.py: file descriptors opened without following
        links, so a link swapped in while the copy runs is refused too; only regular files and
        folders come, only those the release declares (the notebook, its support files), within
        nbgrader's size limits. A refused hand-in is left out, with a warning, and so is each file
        not copied."""
        username = os.path.basename(src).rsplit("+", 3)[0]
        release = self.coursedir.format_path(self.coursedir.release_directory, ".", self.coursedir.assignment_id)
        left_out: list[tuple[str, str]] = []
        declared = handin.declared(release)
        # the release's own support files (checks, conftest.py, selfcheck/) come from the release:
        # a student's edited copy would run as whoever runs pytest in the collected folder
        support = {p for p in declared if not p.endswith(".ipynb") and p not in handin.EXCHANGE_FILES}
        try:
            with handin.folder(os.path.dirname(src), os.path.basename(src)) as fd:
                info = os.fstat(fd)
                why = self._refusal_of(info.st_uid, username)
                if info.st_mode & stat.S_IWOTH:
                    self._open_to_all.add(username)
                if why is None:
                    left_out, why = handin.copy_folder(
                        fd, dest, declared - support, 1000 * self.coursedir.max_file_size,
                        [1000 * self.coursedir.max_dir_size], shutil.ignore_patterns(*self.coursedir.ignore),
                        owner=info.st_uid if self.check_owner else None)
            if why is None:
                shutil.copytree(release, dest, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
        except handin.Refused as exc:
            why = f"it is not a folder of its own ({exc})"
        except OSError as exc:      # writing its copy: this hand-in's problem, never the class's
            why = f"it could not be copied ({exc.strerror}: {exc.filename})"
        for name, reason in left_out:
            if name in support or name.rstrip("/") in {os.path.dirname(p) for p in support}:
                self._replaced.setdefault(name, set()).add(username)    # expected: one line at the end
                continue
            self.log.warning("Left out of %s: %s (%s)", src, name, reason)
        if why:
            self.log.warning("Not collecting %s: %s", src, why)
            shutil.rmtree(dest, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(dest))        # the student's folder, when nothing else is in it

    def _refusal_of(self, uid: int, username: str) -> str | None:
        if self.check_owner and uid != os.geteuid():
            try:
                owner = pwd.getpwuid(uid).pw_name
            except KeyError:
                owner = f"uid {uid}"
            if owner != username:    # files of the instructor's own are the instructor's doing
                return f"it is owned by {owner}, not by {username}"
        return None


def _secret(path: str) -> bytes | None:
    """The submission secret in the hand-in folder ``path``, read without following links; None
    when it carries none that can be read, or one its folder's owner did not write."""
    try:
        with handin.folder(os.path.dirname(path), os.path.basename(path)) as fd:
            secret = handin.read_at(fd, handin.SECRET, handin.MAX_EXCHANGE_FILE, owner=os.fstat(fd).st_uid)
    except (handin.Refused, OSError):
        return None
    return secret.strip() or None

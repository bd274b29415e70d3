"""nbgrader's collect and CSV export, made safe for hand-ins written by strangers.

Both are configured for the course (``nbgrader_bridge.settings``), so plain
``nbgrader collect`` and ``nbgrader export`` in the course folder use them.

* :class:`SafeCollect` copies what students put in the exchange's inbound
  folder through autograder/handin.py, never following a symbolic link
  (nbgrader's copy follows them, so a link to the solutions would be collected
  as a file with their text) and taking only the files the release declares
  (a handed-in ``notes.html`` would be served by formgrader as a page), and
  refuses a hand-in whose folder belongs neither to the student it
  names nor to the instructor collecting (nbgrader only warns): a student who
  submits as someone else is left out, and that student's own latest hand-in
  is collected instead.
* :class:`SafeCsvExport` writes nbgrader's ``grades.csv`` columns through the
  csv module, every text field spreadsheet-safe (a student id starting with
  ``=`` cannot become a formula; a comma in a name cannot shift a column).
* :class:`SanitizeMarkdown` cleans the students' markdown when a submission is
  autograded (what formgrader shows) and before a feedback page is made:
  nbgrader's formgrade and feedback templates render markdown without
  nbconvert's ``sanitize_html``, so a ``<script>`` in a written answer would
  run in the grader's browser, logged in to a Jupyter server.
"""

import contextlib
import glob
import os
import re
import shutil

import bleach
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbgrader.api import MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.plugins import CsvExportPlugin
from nbgrader.preprocessors.base import NbGraderPreprocessor

from autograder import handin

try:
    import pwd
except ImportError:  # pragma: no cover - not on Windows
    pwd = None


class SafeCollect(ExchangeCollect):
    """nbgrader's collect, never following links and refusing hand-ins under another's name."""

    def _refusal(self, path, username):
        """Why a hand-in must not be collected, or None (checked again on the open folder)."""
        if os.path.islink(path):
            return "it is a symbolic link"
        return self._refusal_of(os.lstat(path).st_uid, username)

    def init_src(self):
        super().init_src()           # nbgrader's checks, and the due date
        pattern = os.path.join(self.inbound_path, f"{self.coursedir.student_id or '*'}+"
                                                  f"{self.coursedir.assignment_id}+*")
        accepted = {}
        for path in glob.glob(pattern):
            record = self._path_to_record(path)
            why = self._refusal(path, record["username"])
            if why:
                self.log.warning("Not collecting %s: %s", path, why)
            else:
                accepted.setdefault(record["username"], []).append(record)
        self.src_records = []
        for records in accepted.values():
            records = self._sort_by_timestamp(records)
            if self.duedate is not None and self.before_duedate:
                records = [r for r in records if r["timestamp"] <= self.duedate] or records
            self.src_records.append(records[0])

    def do_copy(self, src, dest, log=None):
        """Copy a hand-in through autograder/handin.py: file descriptors opened without following
        links, so a link swapped in while the copy runs is refused too; only regular files and
        folders come, only those the release declares (the notebook, its support files), within
        nbgrader's size limits. A refused hand-in is left out, with a warning, and so is each file
        not copied."""
        username = os.path.basename(src).rsplit("+", 3)[0]
        release = self.coursedir.format_path(self.coursedir.release_directory, ".", self.coursedir.assignment_id)
        left_out = []
        try:
            with handin.folder(os.path.dirname(src), os.path.basename(src)) as fd:
                why = self._refusal_of(os.fstat(fd).st_uid, username)
                if why is None:
                    left_out, why = handin.copy_folder(
                        fd, dest, handin.declared(release), 1000 * self.coursedir.max_file_size,
                        [1000 * self.coursedir.max_dir_size], shutil.ignore_patterns(*self.coursedir.ignore))
        except handin.Refused as exc:
            why = f"it is not a folder of its own ({exc})"
        for name, reason in left_out:
            self.log.warning("Left out of %s: %s (%s)", src, name, reason)
        if why:
            self.log.warning("Not collecting %s: %s", src, why)
            shutil.rmtree(dest, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(dest))        # the student's folder, when nothing else is in it

    def _refusal_of(self, uid, username):
        if self.check_owner and pwd is not None and uid != os.geteuid():
            try:
                owner = pwd.getpwuid(uid).pw_name
            except KeyError:
                owner = f"uid {uid}"
            if owner != username:    # files of the instructor's own are the instructor's doing
                return f"it is owned by {owner}, not by {username}"
        return None


class SafeCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, with quoting and spreadsheet-safe text."""

    COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
               "email", "raw_score", "late_submission_penalty", "score", "max_score"]

    def export(self, gradebook):
        from autograder.reports import write_csv
        wanted_a = {str(a) for a in self.assignment}
        wanted_s = {str(s) for s in self.student}
        rows = []
        for assignment in gradebook.assignments:
            if wanted_a and assignment.name not in wanted_a:
                continue
            for student in gradebook.students:
                if wanted_s and student.id not in wanted_s:
                    continue
                row = {"assignment": assignment.name, "duedate": assignment.duedate or "",
                       "student_id": student.id, "last_name": student.last_name or "",
                       "first_name": student.first_name or "", "email": student.email or "",
                       "max_score": assignment.max_score, "timestamp": "", "raw_score": 0.0,
                       "late_submission_penalty": 0.0, "score": 0.0}
                try:
                    submission = gradebook.find_submission(assignment.name, student.id)
                except MissingEntry:
                    pass
                else:
                    penalty = submission.late_submission_penalty or 0.0
                    row.update(timestamp=submission.timestamp or "", raw_score=submission.score,
                               late_submission_penalty=penalty,
                               score=max(0.0, submission.score - penalty))
                rows.append({k: (v if isinstance(v, (int, float)) else str(v)) for k, v in row.items()})
        write_csv(self.to or "grades.csv", self.COLUMNS, rows)


_TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5",
         "h6", "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody",
         "td", "th", "thead", "tr", "ul"}
_ATTRIBUTES = {"a": ["href", "title"], "img": ["src", "alt", "title"], "td": ["align"], "th": ["align"]}
_PROTOCOLS = ["http", "https", "mailto", "attachment"]


class SanitizeMarkdown(NbGraderPreprocessor):
    """Every markdown cell rendered to HTML and reduced to the tags and links a written answer
    needs: scripts, event handlers, styles and javascript: links go; text, formatting,
    tables, images and math stay."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            html = bleach.clean(markdown2html_mistune(cell.source), tags=_TAGS, attributes=_ATTRIBUTES,
                                protocols=_PROTOCOLS, strip=True)
            # nbgrader renders the cell as markdown once more: one HTML block without blank lines
            # is passed through untouched, so no markdown link can appear in it now
            cell.source = "<div>\n" + re.sub(r"\n\s*\n", "\n", html.strip()) + "\n</div>"
        return cell, resources

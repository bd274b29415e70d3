""":class:`SafeCsvExport` writes nbgrader's ``grades.csv`` columns through the
csv module, every text field quoted and spreadsheet-safe, the ids unchanged
(:func:`autograder.untrusted.writer`; a comma in a name cannot shift a column).
"""

from nbgrader.api import Gradebook
from nbgrader.plugins import CsvExportPlugin



class SafeCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, with quoting and spreadsheet-safe text."""

    COLUMNS = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
               "email", "raw_score", "late_submission_penalty", "score", "max_score"]
    IDS = ("student_id", "email")       # written unchanged; grades_csv.EXPORT declares them too

    def export(self, gradebook: Gradebook) -> None:
        from autograder.nbgrader.gradebook_rows import totals
        from autograder.untrusted import write_csv
        wanted_a = {str(a) for a in self.assignment}
        wanted_s = {str(s) for s in self.student}
        students = [s for s in gradebook.students if not wanted_s or s.id in wanted_s]
        rows = []
        for assignment in gradebook.assignments:
            if wanted_a and assignment.name not in wanted_a:
                continue
            handed_in = totals(gradebook.db, assignment.name)     # two statements, not three a student
            for student in students:
                row = {"assignment": assignment.name, "duedate": assignment.duedate or "",
                       "student_id": student.id, "last_name": student.last_name or "",
                       "first_name": student.first_name or "", "email": student.email or "",
                       "max_score": assignment.max_score, "timestamp": "", "raw_score": 0.0,
                       "late_submission_penalty": 0.0, "score": 0.0}
                if student.id in handed_in:
                    mine = handed_in[student.id]                 # the penalty to 3 decimals, as totals.csv
                    row.update(timestamp=mine.timestamp or "", raw_score=round(mine.score, 3),
                               late_submission_penalty=round(mine.penalty, 3),
                               score=round(max(0.0, mine.score - mine.penalty), 3))
                rows.append({k: (v if isinstance(v, (int, float)) else str(v)) for k, v in row.items()})
        write_csv(self.to or "grades.csv", self.COLUMNS, rows, ids=self.IDS)

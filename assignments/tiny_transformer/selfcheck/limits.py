"""What a student's code may use, as one record: course.yaml's ``limits:``.

The same record goes from the course's configuration to every process that runs a student's
code (:class:`selfcheck.student.Student`), into the version of every part's result, and into
the released manifest, so the student's own ``pytest`` runs under the grader's limits.
"""

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Limits:
    time_per_test: float     # CPU seconds any one call into the student's code may use
    time_per_part: float     # CPU seconds all the calls of one part may use together
    memory_mb: int           # the address space of each process

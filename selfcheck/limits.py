"""What a student's code may use, as one record: course.yaml's ``limits:``.

The same record goes from the course's configuration to every process that runs a student's
code (:class:`selfcheck.student.Student`), into the version of every part's result, and into
the released manifest, so the student's own ``pytest`` runs under the grader's limits.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class Limits:
    # each field's doc is what course.yaml's key means (the documentation's table of keys shows it)
    time_per_test: float = field(metadata={"doc": "CPU seconds any one call into the student's code may use; "
                                                  "the calls of one part may also wait, sleep or block this long "
                                                  "in all (three times this in wall-clock time is a backstop)"})
    time_per_part: float = field(metadata={"doc": "CPU seconds all the calls of one graded part may use together "
                                                  "(at least time_per_test; three times this in wall-clock time)"})
    memory_mb: int = field(metadata={"doc": "the address space, in MB, of each process running a student's code"})

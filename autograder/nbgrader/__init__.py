"""The course's extensions of nbgrader, laid out as nbgrader lays out its own package.

nbgrader does the releasing, the exchange, the gradebook and formgrader; every one of its
commands in a course folder runs with these in its configuration, so plain nbgrader,
formgrader and ``course`` give the same scores from the same reads of a hand-in.

==================  ===========================================================================
``settings``        the course's nbgrader configuration, applied by every ``nbgrader_config.py``
``preprocessors``   ApplyResults (the course grader's verdicts, never a kernel), RestoreCells,
                    SanitizeMarkdown, CheckCellMetadata, AddSelfCheckKit, and Refuse for a
                    course.yaml that is broken
``converters``      nbgrader's autograde and generate_feedback, reading hand-ins as ``staging``
                    hands them over
``staging``         a hand-in as nbgrader may read it, through the reader (autograder/grade/handin.py)
``plugins``         collect and the CSV export, safe with hand-ins written by strangers
``apps``            nbgrader's converters and export run from ``course``, quietly
``gradebook``       whether the gradebook holds a release; late penalties, the roster and a hand
                    grade written
``gradebook_rows``  the gradebook read back by its tables (hand grades, overrides, totals),
                    without loading nbgrader
``handgrades``      the TA's hand grades across autograde: unchanged answers stay graded, changed
                    ones are flagged for the TA to confirm
``shared_engine``   one SQLAlchemy engine per gradebook for every Gradebook nbgrader opens, its
                    connections kept for the length of one autograde run
``alembic_head``    a new gradebook's schema version, read in this process
``exchange``        where the exchange is, the owner and mode of each level: set up and checked
==================  ===========================================================================

``import nbgrader`` in these modules is nbgrader itself: imports are absolute, and
``autograder/`` is never a folder on ``sys.path`` (the repository's root is). Importing the package
puts this interpreter's ``alembic`` on PATH for nbgrader, and leaves the IRI grammars jsonschema
loads with nbgrader until an IRI is checked (:mod:`autograder.lazy_iri`).
"""

import os
import sys

from autograder import lazy_iri  # noqa: F401  (nbgrader starts without building IRI grammars)

# nbgrader runs `alembic` from PATH to open a new gradebook: make it this interpreter's.
_BIN = os.path.dirname(sys.executable)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")

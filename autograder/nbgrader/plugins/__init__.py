"""nbgrader's collect, release_feedback and CSV export, made safe for hand-ins written by strangers,
one module each as nbgrader keeps its own.

nbgrader takes them by name from its configuration (``ExchangeFactory.collect``,
``ExchangeFactory.release_feedback``, ``ExportApp.plugin_class``;
:mod:`autograder.nbgrader.settings`), so plain ``nbgrader collect``, ``nbgrader release_feedback``
and ``nbgrader export`` in the course folder use them.

====================  =====================================================================
SafeCollect           collect: through the hand-in reader, only declared files, only the owner's
SafeReleaseFeedback   release_feedback: one student at a time, never on a classmate's page
SafeCsvExport         export: grades.csv quoted and spreadsheet-safe, ids unchanged
Refused<step>         every exchange step while course.yaml does not load (or leaves the
                      folder's gradebook behind)
RefusedExport         export, the same
====================  =====================================================================
"""

from autograder.nbgrader import alembic_head  # noqa: F401 - a new gradebook's schema version, read in this process
from autograder.nbgrader.plugins.refused import REFUSED, RefusedExport
from autograder.nbgrader.plugins.safecollect import SafeCollect
from autograder.nbgrader.plugins.safecsvexport import SafeCsvExport
from autograder.nbgrader.plugins.safereleasefeedback import SafeReleaseFeedback

globals().update(REFUSED)        # RefusedExchangeCollect, ...: the names settings gives nbgrader

__all__ = ["RefusedExport", "SafeCollect", "SafeCsvExport", "SafeReleaseFeedback", *REFUSED]

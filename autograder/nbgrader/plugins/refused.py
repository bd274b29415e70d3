"""The exchange steps and the export while course.yaml does not load (or leaves the folder's
gradebook behind): each stops, its problem said in one line."""

import sys

from nbgrader.exchange import abc as exchange_abc
from nbgrader.plugins import ExportPlugin

from autograder.nbgrader.settings import REFUSED_STEPS


class _Refused:
    """Every exchange step (collect, release_assignment, release_feedback, ...) while course.yaml
    does not load: its problem has been said in one line; nbgrader's default exchange
    (``/usr/local/share/nbgrader/exchange``) is neither created nor named."""

    def start(self) -> None:
        sys.exit(1)


# RefusedExchangeCollect, ...: what settings names
REFUSED = {"Refused" + base: type("Refused" + base, (_Refused, getattr(exchange_abc, base)), {})
           for base in REFUSED_STEPS.values()}


class RefusedExport(ExportPlugin):
    """``nbgrader export`` while course.yaml does not load: its problem has been said; no
    ``grades.csv`` is written from a gradebook that is not the course's."""

    def export(self, gradebook: object) -> None:
        sys.exit(1)

"""Kept for the grading folders of earlier versions of the course, nothing else.

``course grade --out DIR`` used to write a ``DIR/nbgrader_config.py`` that imports
``configure`` from here; every nbgrader command and formgrader in such a folder still loads it.
The course's nbgrader configuration lives in :mod:`autograder.nbgrader.settings`.
"""

from autograder.nbgrader.settings import configure

__all__ = ["configure"]

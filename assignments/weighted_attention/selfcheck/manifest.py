"""The release's description of itself, ``selfcheck/manifest.json`` in an assignment folder.

``course release`` writes it: the assignment and its notebook, the course's limits, and each part
in the notebook's order with its title, points and cells, its check cell (``check_cell``), its public
tests (``tests``) and how many hidden checks grading adds (``hidden_checks``). The kit reads it
here, and never rebuilds a name from a part's id.
"""

import json
import os
from typing import Any

from selfcheck.limits import Limits

NAME = "manifest.json"


def read(folder: str) -> dict[str, Any]:
    """The manifest of the assignment folder ``folder``."""
    with open(os.path.join(folder, "selfcheck", NAME)) as fh:
        info: dict[str, Any] = json.load(fh)
    return info


def limits(info: dict[str, Any]) -> Limits:
    """The limits grading holds the student's code to, which the self-check keeps too."""
    return Limits(**info["limits"])


def part_of(info: dict[str, Any], test_file: str) -> str | None:
    """The part whose public tests are the file named ``test_file``, or None."""
    return next((p["id"] for p in info["parts"] if p["tests"] == test_file), None)

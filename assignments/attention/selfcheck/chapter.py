"""The chapter's numbers (data/chapter_numbers.yaml), for the public and hidden checks.

The YAML file in the repository is their one source. A released folder has no
``data/``, so ``course release`` writes a JSON copy beside this module
(``chapter_numbers.json``) and the public checks read that: students need
neither the repository nor pyyaml.
"""

import functools
import json
import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
SHIPPED = os.path.join(HERE, "chapter_numbers.json")
SOURCE = os.path.join(os.path.dirname(HERE), "data", "chapter_numbers.yaml")


@functools.lru_cache(maxsize=None)
def numbers() -> dict:
    if os.path.exists(SOURCE):
        import yaml
        with open(SOURCE) as fh:
            return yaml.safe_load(fh)
    with open(SHIPPED) as fh:
        return json.load(fh)


def get(dotted: str) -> Any:
    """``get("attention.one_query.alpha")`` -> the value at that path."""
    value = numbers()
    for key in dotted.split("."):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value

"""The chapter's numbers, as the hidden suites check them (data/chapter_numbers.yaml).

The file is the one source of these numbers; it was computed from the chapter's
own scripts at full float64 precision (compare with a tolerance, see its meta).
"""

import functools
import os

import yaml

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "data", "chapter_numbers.yaml")


@functools.lru_cache(maxsize=None)
def numbers():
    with open(PATH) as fh:
        return yaml.safe_load(fh)


def get(dotted):
    """``get("attention.one_query.alpha")`` -> the value at that path."""
    value = numbers()
    for key in dotted.split("."):
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value

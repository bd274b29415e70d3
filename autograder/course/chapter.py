"""The chapter's numbers, as the suites check them: see :mod:`selfcheck.chapter`.

data/chapter_numbers.yaml is the one source of these numbers; it was computed
from the chapter's own scripts at full float64 precision (compare with a
tolerance, see its meta).
"""

from selfcheck.chapter import SOURCE, get, numbers  # noqa: F401 - the suites' import path

"""Progress of a grading batch: a live bar on a terminal, plain lines otherwise.

On a terminal (stderr is a TTY) one line is redrawn in place: a bar, the
count, the rate and the time remaining. Anywhere else (CI logs, a file, a
pipe) each finished submission is one plain line, so a log reads top to
bottom and nothing is lost to carriage returns. Not tqdm or rich: neither is a
dependency, and the plain-line mode with each submission's score is what a log needs.
"""

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO

from autograder.records.results import Submission


def _clock(seconds):
    seconds = int(round(max(seconds, 0)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Reports a batch as it goes; ``tty=None`` asks the stream whether it is a terminal."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.clock = clock
        self.total = self.done = self.skipped = 0
        self.started = 0.0
        self._drawn = False

    def start(self, total: int, skipped: int = 0) -> None:
        self.total, self.skipped, self.done = total, skipped, 0
        self.started = self.clock()
        if skipped:
            self._line(f"{skipped} submission(s) unchanged since they were graded by this grader "
                       "and these suites: kept (use --force to grade them again)")
        if total == 0:
            self._line("nothing to grade")
        elif self.tty:
            self._draw("")

    def rate(self) -> float:
        elapsed = self.clock() - self.started
        return self.done / elapsed if elapsed > 0 and self.done else 0.0

    def remaining(self) -> float | None:
        rate = self.rate()
        return (self.total - self.done) / rate if rate else None

    def status(self) -> str:
        """count, rate and time remaining, as one short text."""
        rate = self.rate()
        left = self.remaining()
        eta = _clock(left) if left is not None else "--:--"
        return (f"{self.done}/{self.total}  {rate * 60:.1f}/min  "
                f"elapsed {_clock(self.clock() - self.started)}  left {eta}")

    def update(self, record: Submission) -> None:
        self.done += 1
        what = f"{record.student}/{record.assignment} {record.score:g}/{record.max_score:g}"
        if record.problem:
            what += " (could not be graded)"
        if self.tty:
            self._draw(what)
        else:
            self._line(f"[{self.status()}] {what}")

    def finish(self) -> None:
        if self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False

    def _line(self, text):
        if self._drawn:
            self.stream.write("\n")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def _draw(self, last):
        width = shutil.get_terminal_size((100, 20)).columns
        filled = int(24 * self.done / self.total) if self.total else 24
        bar = "#" * filled + "." * (24 - filled)
        text = f"grading [{bar}] {self.status()}  {last}"
        self.stream.write("\r" + text[:width - 1].ljust(width - 1))
        self.stream.flush()
        self._drawn = True

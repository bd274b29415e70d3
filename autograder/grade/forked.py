"""Worker processes forked from a batch's own process (grading's, the gradebook stage's), which end
when it ends.

Ctrl-C reaches the whole process group, workers included; a supervisor's SIGTERM to the command
alone, or its death, did not, and left its workers grading, or writing the gradebook, after the
command had ended. Each worker asks the kernel for a SIGTERM when the process that forked it ends.
"""

import concurrent.futures as cf
import ctypes
import multiprocessing
import os
import signal
from collections.abc import Callable
from typing import Any

_PR_SET_PDEATHSIG = 1      # prctl(2): the signal this process gets when its parent ends


def pool(workers: int, initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> cf.ProcessPoolExecutor:
    """``workers`` processes forked from this one, each ended when this one ends; ``initializer(*initargs)``
    runs in each first."""
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                  initializer=_start, initargs=(os.getpid(), initializer, initargs))


def _start(parent: int, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    end_with(parent)
    if initializer is not None:
        initializer(*initargs)


def end_with(parent: int) -> None:
    """A SIGTERM to this process when ``parent``, the process that forked it, ends (Linux's prctl;
    elsewhere nothing)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:      # it ended before the request was made
        os.kill(os.getpid(), signal.SIGTERM)

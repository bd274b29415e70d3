"""Worker processes forked from a batch's own process (grading's, the gradebook stage's), which end
when it ends.

A supervisor's SIGTERM to the command alone, or its death, left its workers grading, or writing
the gradebook, after the command had ended: each worker asks the kernel for a SIGTERM when the
process that forked it ends. Ctrl-C, which reaches the whole process group, is the batch's process's
to handle: it stops its workers (:func:`stop`), which leave it to it.
"""

import concurrent.futures as cf
import contextlib
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


def stop(pool: object) -> None:
    """End ``pool``'s workers now (the batch was interrupted): its pending work is not done (a pool
    of no local processes, a cluster's, is left to itself)."""
    for process in list(getattr(pool, "_processes", {}).values()):
        with contextlib.suppress(Exception):
            process.terminate()


def _start(parent: int, initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    end_with(parent)
    # Ctrl-C reaches the batch's process, which stops its workers (:func:`stop`): a worker waiting
    # for work would otherwise print a traceback of its own (a handler, unlike an ignored signal,
    # does not outlive the exec of the processes a worker starts)
    signal.signal(signal.SIGINT, _wait_to_be_stopped)
    if initializer is not None:
        initializer(*initargs)


def _wait_to_be_stopped(*_: Any) -> None:
    """A worker's Ctrl-C: nothing; its batch's process stops it."""


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

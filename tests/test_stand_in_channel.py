"""The stand-ins' channel, seen from the student's process: one pair of pipes to the process
answering another part's functions (here a thread serving a slow softmax), whatever the code
around the calls does: threads calling at once, an alarm's handler that calls too, a call too
large."""

import math
import os
import signal
import threading
import time

import numpy as np
import pytest

from selfcheck import child


def _slow_softmax(z, axis=-1):
    time.sleep(0.05)                  # long enough for an alarm or another thread to come in
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.fixture
def softmax():
    """``softmax`` as a student's process has it when the reference stands in."""
    to_r, to_w = os.pipe()
    back_r, back_w = os.pipe()
    server = threading.Thread(target=child._serve, args=({"softmax": _slow_softmax}, ["softmax"], (to_r, back_w)),
                              daemon=True)
    server.start()
    channel = child._Channel(None, None)
    channel.started = True
    channel.stand_ins = (os.fdopen(to_w, "wb"), os.fdopen(back_r, "rb"))
    yield channel.stand_in("softmax", "softmax")
    channel.stand_ins[0].close()
    server.join(5)
    channel.stand_ins[1].close()


def test_calls_from_threads_at_once_each_get_their_own_answer(softmax, monkeypatch):
    read_frame = child._read_frame

    def unhurried(stream):            # each thread comes to read its answer in its own time
        time.sleep(0.001 * (threading.get_ident() % 7))
        return read_frame(stream)
    monkeypatch.setattr(child, "_read_frame", unhurried)
    found = {}

    def ask(k):
        found[k] = softmax(np.array([0.0, math.log(k)]))
    threads = [threading.Thread(target=ask, args=(k,)) for k in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert {k: round(float(v[1]), 6) for k, v in found.items()} == {k: round(k / (k + 1), 6) for k in range(1, 9)}


def test_an_alarm_waits_for_the_call_under_way_and_its_handler_may_call_too(softmax):
    heard = []

    def alarm(*_):
        heard.append(softmax(np.array([0.0, 0.0])))
        raise TimeoutError
    before = signal.signal(signal.SIGALRM, alarm)
    # the alarm reaches the thread making the call, while it waits for its answer (a student's
    # process has that thread alone: numpy's BLAS runs on one thread there)
    timer = threading.Timer(0.01, signal.pthread_kill, (threading.get_ident(), signal.SIGALRM))
    try:
        timer.start()
        with pytest.raises(TimeoutError):
            softmax(np.array([0.0, 0.0, 0.0]))
    finally:
        timer.join()
        signal.signal(signal.SIGALRM, before)
    assert np.allclose(heard[0], [0.5, 0.5])
    assert np.allclose(softmax(np.array([0.0, math.log(3)])), [0.25, 0.75])     # still in step


def test_a_call_too_large_is_refused_with_its_size_and_the_next_is_answered(softmax):
    with pytest.raises(child.StandInError, match=r"at most 16 MB .* came to 23 MB"):
        softmax(np.zeros(3_000_000))
    assert np.allclose(softmax(np.array([0.0, 0.0])), [0.5, 0.5])

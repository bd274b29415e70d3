"""`course grade --cluster ADDRESS`: the batch's submissions graded on a Dask distributed cluster.

The cluster only stands in for the local worker processes of
``grading.grade_all``: planning, retries, the journal, results, the gradebook
and the exports stay on the client, which is still their one writer. Nothing
assumes a shared filesystem: a task carries one notebook's bytes and the
versions the client grades with, and its answer is the plain record a local
worker returns. A worker runs the course installed beside it (the same
commit as the client's) and refuses a task whose grader or suites are not
its own, so a stale worker can never grade.

Faults: a worker that dies takes its tasks with it, and the scheduler gives
them to another (each submission is recorded once, when its task finishes);
a task that failed on the grader's side is retried as locally; a scheduler
that goes away stops the batch as an interruption does, resumable.

Dask is an optional extra (``pip install -e .[cluster]``): nothing here is
imported unless a batch is given a cluster.
"""

import concurrent.futures as cf
import logging
import os
import tempfile
import threading

from autograder import config, grading
from autograder.results import Submission
from selfcheck.program import NotebookError

# pytest.main and the stdout it redirects are process-wide: a worker process grades one
# submission at a time, whatever its --nthreads (run more worker processes for more).
_ONE_AT_A_TIME = threading.Lock()


class ClusterError(config.ConfigError):
    """The cluster cannot grade this batch (unreachable, or workers of another version); one line."""


class VersionMismatch(RuntimeError):
    """A worker's grader or suites are not the client's."""


def versions(course):
    """What a worker must have to grade for this client: the grader's hash and every part's suite hash."""
    return {"grader": grading.grader_version(),
            "suites": {a.id: grading.suite_versions(course, a.id) for a in course.assignments}}


def worker_course():
    """The course installed beside this worker (COURSE_YAML, else the package's own course.yaml)."""
    return config.load(os.environ.get("COURSE_YAML") or None)


def mismatch(expected, course=None):
    """None when this process grades as ``expected`` says, else the one line saying how it differs."""
    course = course or worker_course()
    if grading.grader_version() != expected["grader"]:
        return (f"grader {grading.grader_version()} here, {expected['grader']} on the client: install "
                "the course at the client's commit on this worker")
    for assignment_id, wanted in expected["suites"].items():
        try:
            mine = grading.suite_versions(course, assignment_id)
        except config.ConfigError:
            mine = None
        if mine != wanted:
            return (f"the suites of {assignment_id} differ from the client's: install the course "
                    "at the client's commit on this worker")
    return None


def grade_remote(task):
    """On a worker: grade one submission from its bytes and return its record (plain data)."""
    with _ONE_AT_A_TIME:
        course = worker_course()
        why = mismatch(task["versions"], course)
        if why:
            from distributed import get_worker
            raise VersionMismatch(f"worker {get_worker().address} refuses to grade: {why}")
        with tempfile.TemporaryDirectory(prefix="submission-") as folder:
            path = os.path.join(folder, task["notebook"])
            with open(path, "wb") as fh:
                fh.write(task["bytes"])
            return grading._worker((course, task["student"], task["assignment"], path,
                                    task["versions"]["grader"])).to_json()


class ClusterPool:
    """The local process pool's stand-in in ``grading.grade_all``: ``submit(grading._worker, args)``
    returns a concurrent.futures Future of the record, graded on the cluster."""

    def __init__(self, course, address, client):
        self.course, self.address, self.client = course, address, client
        self.expected = versions(course)
        self._running = {}        # dask future -> its concurrent.futures twin

    def submit(self, fn, args):
        course, student, assignment, path, grader = args
        try:
            raw = grading.read_submission(path)
        except NotebookError:     # nothing to send: the record says why, as a local worker's does
            done = cf.Future()
            done.set_result(fn(args))
            return done
        task = {"student": student, "assignment": assignment, "notebook": os.path.basename(path),
                "bytes": raw, "versions": dict(self.expected, grader=grader)}
        twin = cf.Future()
        remote = self.client.submit(grade_remote, task, pure=False, key=f"grade-{student}-{assignment}-"
                                    f"{os.urandom(4).hex()}")
        self._running[remote] = twin
        remote.add_done_callback(self._settle)
        return twin

    def _settle(self, remote):
        twin = self._running.pop(remote, None)
        if twin is None or twin.done():
            return
        try:
            if remote.status == "finished":
                twin.set_result(Submission.from_json(remote.result()))
            elif remote.status == "error":
                exc = remote.exception()
                twin.set_exception(grading.Stopped(str(exc)) if isinstance(exc, VersionMismatch) else exc)
            else:                 # cancelled: the scheduler went away (or forgot the task)
                twin.set_exception(grading.Stopped(self._lost()))
        except Exception as exc:  # noqa: BLE001 - the connection broke while fetching the result
            twin.set_exception(grading.Stopped(self._lost(exc)))

    def _lost(self, exc=None):
        detail = f" ({type(exc).__name__}: {exc})" if exc else ""
        return f"the Dask scheduler at {self.address} stopped answering{detail}"

    def shutdown(self, wait=True, cancel_futures=False):
        """Forget the tasks not yet done (the client stays connected for the batch's retries)."""
        if cancel_futures and self._running:
            pending = list(self._running)
            self._running.clear()
            try:
                self.client.cancel(pending)
            except Exception:  # noqa: BLE001 - a scheduler that is gone has nothing to cancel
                pass

    def close(self):
        self.client.close()


def connect(course, address, timeout=10):
    """A pool grading on the scheduler at ``address``, once every worker there has shown it grades
    as this client does (ClusterError with one line otherwise)."""
    try:
        from distributed import Client
    except ImportError:
        raise ClusterError("--cluster needs Dask: pip install -e '.[cluster]' (on the client and on "
                           "every worker)") from None
    # the batch's own line says when the scheduler goes away; Dask's reconnection tracebacks would
    # bury it
    for name in ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"no Dask scheduler answers at {address} ({exc})") from None
    pool = ClusterPool(course, address, client)
    try:
        answers = client.run(mismatch, pool.expected)
    except Exception as exc:  # noqa: BLE001 - a worker whose course does not load is stale too
        client.close()
        raise ClusterError(f"the workers at {address} could not check their course: "
                           f"{type(exc).__name__}: {exc}") from None
    stale = {worker: why for worker, why in answers.items() if why}
    if stale:
        client.close()
        worker, why = sorted(stale.items())[0]
        more = f" (and {len(stale) - 1} more)" if len(stale) > 1 else ""
        raise ClusterError(f"worker {worker}{more} refuses to grade: {why}")
    return pool

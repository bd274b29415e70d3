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

Trust: a worker runs whatever a client of its scheduler sends (``Client.run``),
as root, so the cluster speaks only TLS with mutual authentication: the client
shows course.yaml's ``cluster_tls`` certificate, signed by the cluster's CA
(autograder/grade/cluster_certs.py), and a plain tcp:// address is refused before
anything connects.

Dask is an optional extra (``pip install -e .[cluster]``): nothing here is
imported unless a batch is given a cluster.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from autograder.course import config
from autograder.grade import cores, discovery, grading, handin
from autograder.grade.versions import grader_version, suite_versions
from autograder.records.results import Submission
from selfcheck.program import NotebookError

if TYPE_CHECKING:
    import distributed
    import distributed.security

# pytest.main and the stdout it redirects are process-wide: a worker process grades one
# submission at a time, whatever its --nthreads (run more worker processes for more).
_ONE_AT_A_TIME = threading.Lock()


class ClusterError(config.ConfigError):
    """The cluster cannot grade this batch (unreachable, or workers of another version); one line."""


class VersionMismatch(RuntimeError):
    """A worker's grader or suites are not the client's."""


def versions(course: config.Course) -> dict:
    """What a worker must have to grade for this client: the grader's hash and every part's suite hash."""
    return {"grader": grader_version(),
            "suites": {a.id: suite_versions(course, a.id) for a in course.assignments}}


def worker_course() -> config.Course:
    """The course installed beside this worker (COURSE_YAML, else the package's own course.yaml)."""
    return config.load(os.environ.get("COURSE_YAML") or None)


def mismatch(expected: dict, course: config.Course | None = None) -> str | None:
    """None when this process grades as ``expected`` says, else the one line saying how it differs."""
    course = course or worker_course()
    if grader_version() != expected["grader"]:
        return (f"grader {grader_version()} here, {expected['grader']} on the client: install "
                "the course at the client's commit on this worker")
    for assignment_id, wanted in expected["suites"].items():
        try:
            mine = suite_versions(course, assignment_id)
        except config.ConfigError:
            mine = None
        if mine != wanted:
            return (f"the suites of {assignment_id} differ from the client's: install the course "
                    "at the client's commit on this worker")
    return None


def grade_remote(task: dict) -> dict:
    """On a worker: grade one submission from its bytes and return its record (plain data)."""
    with _ONE_AT_A_TIME:
        course = worker_course()
        why = mismatch(task["versions"], course)
        if why:
            from distributed import get_worker
            raise VersionMismatch(f"worker {get_worker().address} refuses to grade: {why}")
        with tempfile.TemporaryDirectory(prefix="submission-") as folder, cores.on_idlest():
            path = os.path.join(folder, task["notebook"])
            with open(path, "wb") as fh:
                fh.write(task["bytes"])
            return grading.grade_task(course, discovery.Task(task["student"], task["assignment"], path),
                                      task["versions"]["grader"]).to_json()


class ClusterPool:
    """The local process pool's stand-in in ``grading.grade_all``: ``submit(grading.grade_task,
    course, task, grader)`` returns a concurrent.futures Future of the record, graded on the cluster."""

    def __init__(self, course: config.Course, address: str, client: distributed.Client):
        self.course, self.address, self.client = course, address, client
        self.expected = versions(course)
        self._running: dict = {}  # dask future -> its concurrent.futures twin

    def submit(self, fn: Callable[[config.Course, discovery.Task, str], Submission], course: config.Course,
               task: discovery.Task, grader: str) -> cf.Future:
        try:
            raw = handin.read_submission(task.path)
        except NotebookError:     # nothing to send: the record says why, as a local worker's does
            done: cf.Future = cf.Future()
            done.set_result(fn(course, task, grader))
            return done
        remote_task = {"student": task.student, "assignment": task.assignment,
                       "notebook": os.path.basename(task.path), "bytes": raw,
                       "versions": dict(self.expected, grader=grader)}
        twin: cf.Future = cf.Future()
        remote = self.client.submit(grade_remote, remote_task, pure=False,
                                    key=f"grade-{task.student}-{task.assignment}-{os.urandom(4).hex()}")
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

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        """Forget the tasks not yet done (the client stays connected for the batch's retries)."""
        if cancel_futures and self._running:
            pending = list(self._running)
            self._running.clear()
            try:
                self.client.cancel(pending)
            except Exception:  # noqa: BLE001 - a scheduler that is gone has nothing to cancel
                pass

    def close(self) -> None:
        self.client.close()


def security(course: config.Course, address: str) -> distributed.security.Security:
    """The client's side of the cluster's mutual TLS, from course.yaml's ``cluster_tls``, once its
    files are there and its key is this account's alone (ClusterError with one line otherwise)."""
    from distributed.security import Security
    tls = course.cluster_tls
    if tls is None:
        raise ClusterError(f"{address}: {os.path.relpath(course.path)} has no cluster_tls, the CA, certificate "
                           "and key this client shows the cluster (`course cluster --certs DIR` makes a set)")
    where = f"{os.path.relpath(course.path)}: cluster_tls"
    for key in ("ca", "cert", "key"):
        if not os.path.isfile(getattr(tls, key)):
            raise ClusterError(f"{where}.{key}: {getattr(tls, key)} does not exist")
    held = os.stat(tls.key)
    if held.st_uid != os.geteuid():
        raise ClusterError(f"{where}.key: {tls.key} belongs to uid {held.st_uid}, not to this account: "
                           "keep the key in a file of your own, mode 600")
    if held.st_mode & 0o077:
        raise ClusterError(f"{where}.key: {tls.key} is readable by other accounts (mode "
                           f"{held.st_mode & 0o777:o}): chmod 600 {tls.key}")
    return Security(tls_ca_file=tls.ca, tls_client_cert=tls.cert, tls_client_key=tls.key,
                    require_encryption=True)


def connect(course: config.Course, address: str, timeout: float = 10) -> ClusterPool:
    """A pool grading on the scheduler at ``address``, over mutual TLS, once every worker there has
    shown it grades as this client does (ClusterError with one line otherwise)."""
    config.check_cluster_address("--cluster", address)
    try:
        from distributed import Client
        from distributed.comm.core import FatalCommClosedError
    except ImportError:
        raise ClusterError("--cluster needs Dask: pip install -e '.[cluster]' (on the client and on "
                           "every worker)") from None
    credentials = security(course, address)
    # the batch's own line says when the scheduler goes away; Dask's reconnection tracebacks would
    # bury it
    for name in ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        client = Client(address, timeout=timeout, set_as_default=False, security=credentials)
    except FatalCommClosedError as exc:
        raise ClusterError(f"the Dask scheduler at {address} and this client do not accept each other's "
                           f"certificates ({exc}): cluster_tls must be of the set the cluster was started "
                           "with") from None
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

"""`course grade --cluster`: a real `dask scheduler` and real `dask worker` processes on 127.0.0.1.

The same cohort graded on the cluster and locally gives the same grades.csv; a
worker killed mid-batch loses nothing and no submission is recorded twice; a
scheduler that goes away stops the batch, which `--resume` finishes; a worker
with another course refuses with one line.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from autograder import config, grading, pipeline

distributed = pytest.importorskip("distributed", reason="Dask is not installed: pip install -e '.[cluster]' "
                                                        "(make test does)")

from test_batch import _small_cohort  # noqa: E402

pytestmark = pytest.mark.slow
BIN = os.path.dirname(sys.executable)


def _env(**extra):
    return dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), MPLBACKEND="Agg", **extra)


class Cluster:
    """A scheduler and its workers, each in a process group of its own (so a kill takes the
    sandboxes it started too)."""

    def __init__(self, folder):
        self.folder = folder
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        self.scheduler = self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(port),
                                                   "--no-dashboard"])
        self.workers = []

    def _start(self, name, args, **env):
        log = open(os.path.join(self.folder, f"{name}.log"), "ab")
        return subprocess.Popen([os.path.join(BIN, "dask")] + args, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=_env(**env))

    def add_worker(self, **env):
        n = len(self.workers)
        self.workers.append(self._start(f"worker{n}", [
            "worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
            "--local-directory", os.path.join(self.folder, f"worker{n}")], **env))
        with distributed.Client(self.address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(sum(w.poll() is None for w in self.workers), timeout=120)
        return self.workers[-1]

    @staticmethod
    def kill(proc):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def close(self):
        for proc in self.workers + [self.scheduler]:
            self.kill(proc)


@pytest.fixture
def cluster(tmp_path):
    made = Cluster(str(tmp_path))
    try:
        yield made
    finally:
        made.close()


def _grade(submitted, out, *extra):
    return subprocess.Popen([os.path.join(BIN, "course"), "grade", str(submitted), "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())


def _wait_for_results(out, at_least, proc):
    deadline = time.monotonic() + 300
    while len(list(out.glob("results/*/*.json"))) < at_least:
        assert proc.poll() is None and time.monotonic() < deadline, "the batch ended before the kill"
        time.sleep(0.2)


def _graded_once(out, made):
    """Every submission has one current result, none replaced (no history), none a grader error."""
    for student, assignment in made:
        record = grading.read_result(str(out), student, assignment)
        assert record is not None and not record.grader_error, (student, record)
        assert not os.path.exists(grading.history_folder(str(out), student)), student
    assert len(list(out.glob("results/*/*.json"))) == len(made)
    assert grading.read_journal(str(out))["finished"]


def test_a_killed_worker_loses_nothing_and_grades_match_a_local_run(course, cluster, tmp_path):
    submitted = tmp_path / "submitted"
    made = _small_cohort(course, submitted, mistakes=3)
    cluster.add_worker()
    doomed = cluster.add_worker()
    out = tmp_path / "on-cluster"
    run = _grade(submitted, out, "--cluster", cluster.address)
    _wait_for_results(out, 1, run)
    cluster.kill(doomed)                 # mid-batch: the other worker grades what it held
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr[-3000:]
    assert f"graded now: {len(made)}" in stdout
    _graded_once(out, made)

    local = tmp_path / "local"
    pipeline.grade(course, str(submitted), str(local), jobs=2)
    assert (out / "grades.csv").read_text() == (local / "grades.csv").read_text()
    scores = {(r.student, p.part): (p.score, p.status, p.reason)
              for r in grading.load_results(str(local)) for p in r.parts}
    assert scores == {(r.student, p.part): (p.score, p.status, p.reason)
                      for r in grading.load_results(str(out)) for p in r.parts}

    again = _grade(submitted, out, "--cluster", cluster.address)       # incremental, as locally
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr[-3000:]
    assert "graded now: 0" in stdout and f"kept (unchanged since graded): {len(made)}" in stdout


def test_a_vanished_scheduler_stops_the_batch_and_resume_finishes_it(course, cluster, tmp_path):
    submitted = tmp_path / "submitted"
    made = _small_cohort(course, submitted, mistakes=1)
    cluster.add_worker()
    out = tmp_path / "out"
    run = _grade(submitted, out, "--cluster", cluster.address)
    _wait_for_results(out, 1, run)
    cluster.kill(cluster.scheduler)
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 130, stderr[-3000:]
    assert f"error: the Dask scheduler at {cluster.address} stopped answering" in stderr
    assert "Traceback" not in stderr
    assert not grading.read_journal(str(out))["finished"]
    kept = grading.load_results(str(out))
    assert kept and not any(r.grader_error for r in kept)   # never a student's score

    resumed = _grade(submitted, out, "--resume")          # locally: the cluster is gone
    stdout, stderr = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, stderr[-3000:]
    _graded_once(out, made)


def test_a_worker_with_another_course_refuses_with_one_line(course, course_copy, cluster, tmp_path):
    from autograder import cluster as dask_cluster

    def slower(raw):
        raw["limits"]["time_per_test"] += 1
    other = course_copy(slower)
    cluster.add_worker(COURSE_YAML=other.path)
    with pytest.raises(config.ConfigError) as refused:
        dask_cluster.connect(course, cluster.address)
    line = str(refused.value)
    assert "\n" not in line and "refuses to grade" in line and "the client's commit" in line

    expected = dask_cluster.versions(course)          # a task reaching such a worker is refused too
    assert dask_cluster.mismatch(expected, other).startswith("the suites of attention differ")
    assert dask_cluster.mismatch(dict(expected, grader="0" * 12), course).startswith("grader ")
    assert dask_cluster.mismatch(expected, course) is None


def test_no_scheduler_is_one_line_and_nothing_graded(course, tmp_path):
    from autograder import cluster as dask_cluster
    with socket.socket() as s:              # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(config.ConfigError, match=f"no Dask scheduler answers at tcp://127.0.0.1:{port}"):
        dask_cluster.connect(course, f"tcp://127.0.0.1:{port}", timeout=2)

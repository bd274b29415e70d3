"""`course grade --cluster`: a real `dask scheduler` and real `dask worker` processes on 127.0.0.1,
speaking only mutual TLS with the certificates `course cluster --certs` makes.

Without the course's credentials nothing connects, runs or joins: a plain tcp://
client or worker, a TLS client with no certificate or with another CA's, and a
worker with another CA's certificate; every process listens only on the address
it was given. With them, the same cohort graded on the cluster and locally gives
the same grades.csv; a worker killed mid-batch loses nothing and no submission
is recorded twice; a scheduler that goes away stops the batch, which `--resume`
finishes; a worker with another course refuses with one line.

One cluster serves the module (each start costs seconds); a test that kills its
scheduler leaves the next one to start another.
"""

import asyncio
import contextlib
import json
import os
import pathlib
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

from autograder import pipeline
from autograder.course import config
from autograder.grade import cluster_certs
from autograder.records import store

distributed = pytest.importorskip("distributed", reason="Dask is not installed: pip install -e '.[cluster]' "
                                                        "(make test does)")

from test_batch import _small_cohort  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("graded_for_real")]   # graded there, not reused
BIN = os.path.dirname(sys.executable)


def _env(**extra):
    return dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), MPLBACKEND="Agg", **extra)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tls(certs, role):
    """A dask command's TLS flags for ``role`` from the set in ``certs``."""
    cert, key = cluster_certs.files(role)
    return ["--tls-ca-file", str(certs / cluster_certs.CA), "--tls-cert", str(certs / cert),
            "--tls-key", str(certs / key)]


class Cluster:
    """A TLS scheduler and its workers started as docs/how-to/cluster.md says, each in a process
    group of its own (so a kill takes the sandboxes it started too)."""

    def __init__(self, folder, certs, security):
        self.folder, self.certs, self.security = folder, certs, security
        self.scheduler, self.workers, self.started = None, [], []

    def _start(self, name, args, **env):
        log = open(os.path.join(self.folder, f"{len(self.started):02d}-{name}.log"), "ab")
        proc = subprocess.Popen([os.path.join(BIN, "dask")] + args, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=_env(**env))
        proc.log = log.name
        self.started.append(proc)
        return proc

    def private(self, name):
        path = os.path.join(self.folder, name)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    def start_worker(self, scheduler=None, tls=None, **env):
        """A `dask worker` process (not waited for): by default the course's, with the worker's certificate."""
        return self._start("worker", [
            "worker", scheduler or self.address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
            "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
            "--local-directory", self.private(f"worker-space-{len(self.started)}"),
            *(_tls(self.certs, "worker") if tls is None else tls)],
            **{"DASK_DISTRIBUTED__WORKER__HTTP__ROUTES": "['distributed.http.health']", **env})

    def ready(self, workers=1, **env):
        """A running scheduler with at least ``workers`` of the course's workers registered."""
        if self.scheduler is None or self.scheduler.poll() is not None:
            for proc in self.workers:
                self.kill(proc)
            port = _free_port()
            self.address = f"tls://127.0.0.1:{port}"
            self.scheduler = self._start("scheduler", [
                "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard",
                "--dashboard-address", "127.0.0.1:0", *_tls(self.certs, "scheduler")],
                DASK_TEMPORARY_DIRECTORY=self.private("scheduler-space"),
                DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES="['distributed.http.health']")
            self.workers = []
        self.workers = [w for w in self.workers if w.poll() is None]
        self.workers += [self.start_worker(**env) for _ in range(workers - len(self.workers))]
        with distributed.Client(self.address, timeout=60, set_as_default=False, security=self.security) as c:
            c.wait_for_workers(len(self.workers), timeout=120)
            return set(c.scheduler_info()["workers"])

    def add_worker(self, **env):
        """One more of the course's workers, once it has registered."""
        self.ready(len(self.workers) + 1, **env)
        return self.workers[-1]

    @staticmethod
    def kill(proc):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def close(self):
        for proc in self.started:
            self.kill(proc)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """The cluster's set, made by `course cluster --certs`."""
    folder = tmp_path_factory.mktemp("cluster") / "certs"
    made = subprocess.run([os.path.join(BIN, "course"), "cluster", "--certs", str(folder)],
                          capture_output=True, text=True, env=_env())
    assert made.returncode == 0, made.stderr
    assert f"key: {folder / 'client-key.pem'}" in made.stdout
    return folder


@pytest.fixture(scope="module")
def tls_course(certs, copy_course, tmp_path_factory):
    """The course with course.yaml's cluster_tls naming the client's certificate and key."""
    root = tmp_path_factory.mktemp("tls-course")
    copy_course(str(root))
    raw = yaml.safe_load((root / "course.yaml").read_text())
    raw["cluster_tls"] = {"ca": str(certs / "ca.pem"), "cert": str(certs / "client.pem"),
                          "key": str(certs / "client-key.pem")}
    (root / "course.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return config.load(str(root / "course.yaml"))


@pytest.fixture(scope="module")
def cluster(certs, tls_course, tmp_path_factory):
    from autograder.grade import cluster as dask_cluster
    made = Cluster(str(tmp_path_factory.mktemp("cluster-logs")), certs,
                   dask_cluster.security(tls_course, "the test's cluster"))
    try:
        yield made
    finally:
        made.close()


def _grade(course, submitted, out, *extra):
    return subprocess.Popen([os.path.join(BIN, "course"), "--config", course.path, "grade", str(submitted),
                             "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())


def _wait_for_results(out, at_least, proc):
    deadline = time.monotonic() + 300
    while len(list(out.glob("results/*/*.json"))) < at_least:
        assert proc.poll() is None and time.monotonic() < deadline, "the batch ended before the kill"
        time.sleep(0.2)


def _graded_once(out, made):
    """Every submission has one current result, none replaced (no history), none a grader error."""
    for student, assignment in made:
        record = store.read_result(str(out), student, assignment)
        assert record is not None and not record.grader_error, (student, record)
        assert not os.path.exists(store.history_folder(str(out), student)), student
    assert len(list(out.glob("results/*/*.json"))) == len(made)
    assert store.read_journal(str(out))["finished"]


# --- what a stranger on the network or a co-tenant tries ------------------------------------------

def _client_runs(address, security, marker):
    """As a Dask client: connect, run code on every worker, submit a task. The error that stopped
    it, or None when both wrote ``marker`` (as the worker's account)."""
    write = pathlib.Path(marker).write_text
    try:
        with distributed.Client(address, timeout=5, set_as_default=False, security=security) as client:
            client.run(write, "run")
            client.submit(write, "submit", pure=False).result(timeout=60)
    except Exception as exc:  # noqa: BLE001 - any refusal will do; the marker says whether it ran
        return exc
    return None


def _raw_runs(address, op, connection_args, marker):
    """Past Dask's own client: the scheduler's `broadcast` (what Client.run sends) or a worker's own
    `run` handler, over a connection made with ``connection_args``. The error, or None when it ran."""
    from distributed.core import rpc
    from distributed.protocol import pickle
    function, args = pickle.dumps(pathlib.Path(marker).write_text), pickle.dumps(("raw",))

    async def attempt():
        async with rpc(address, connection_args=connection_args, timeout=5) as peer:
            if op == "broadcast":
                return await peer.broadcast(msg={"op": "run", "function": function, "args": args})
            return await peer.run(function=function, args=args)
    try:
        asyncio.run(attempt())
    except Exception as exc:  # noqa: BLE001
        return exc
    return None


def _no_certificate(certs):
    """A TLS connection that trusts the cluster's CA but shows no certificate of its own."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(certs / cluster_certs.CA))
    context.check_hostname = False
    return {"ssl_context": context, "require_encryption": True}


def _waiting(proc, deadline):
    """Wait until a rogue worker has tried to register (or has given up)."""
    while time.monotonic() < deadline and proc.poll() is None:
        if "Waiting to connect" in pathlib.Path(proc.log).read_text(errors="replace"):
            return
        time.sleep(0.2)


def test_without_the_courses_credentials_nothing_connects_runs_or_joins(course, tls_course, certs, cluster,
                                                                        tmp_path):
    from distributed.security import Security

    from autograder.grade import cluster as dask_cluster
    other = tmp_path / "another-set"                 # a complete set of another CA's, as a stranger makes
    cluster_certs.make(str(other), "intruder")
    honest = cluster.ready(workers=1)
    ours = _tls(certs, "worker")                     # a stranger may trust the cluster's CA: it is public
    rogues = {"plain tcp": cluster.start_worker(cluster.address.replace("tls://", "tcp://"), tls=[]),
              "another CA's certificate": cluster.start_worker(tls=ours[:2] + _tls(other, "worker")[2:])}
    downgraded = cluster.start_worker(cluster.address.replace("tls://", "tcp://"))   # the course's own
    marker = tmp_path / "ran-on-a-worker"

    plain = cluster.address.replace("tls://", "tcp://")
    stranger = Security(tls_ca_file=str(certs / "ca.pem"), tls_client_cert=str(other / "client.pem"),
                        tls_client_key=str(other / "client-key.pem"), require_encryption=True)
    worker = sorted(honest)[0]
    attempts = {
        "plain tcp client": _client_runs(plain, None, marker),
        "client with another CA's certificate": _client_runs(cluster.address, stranger, marker),
        "TLS without a certificate, to the scheduler": _raw_runs(cluster.address, "broadcast",
                                                                 _no_certificate(certs), marker),
        "TLS without a certificate, to a worker": _raw_runs(worker, "run", _no_certificate(certs), marker),
        "another CA's certificate, to a worker": _raw_runs(worker, "run", stranger.get_connection_args("client"),
                                                           marker),
        "plain tcp, to a worker": _raw_runs(worker.replace("tls://", "tcp://"), "run", {}, marker),
    }
    assert not marker.exists(), marker.read_text()
    assert all(attempts.values()), [what for what, refused in attempts.items() if not refused]
    assert _client_runs(cluster.address, cluster.security, marker) is None    # the same code, with the
    assert marker.read_text() == "submit"                                     # course's credentials, runs

    with pytest.raises(config.ConfigError, match="has no cluster_tls"):     # the course without credentials
        dask_cluster.connect(course, cluster.address)
    key = pathlib.Path(tls_course.cluster_tls.key)
    key.chmod(0o640)
    try:
        with pytest.raises(config.ConfigError, match=r"readable by other accounts \(mode 640\): chmod 600"):
            dask_cluster.connect(tls_course, cluster.address)
    finally:
        key.chmod(0o600)

    deadline = time.monotonic() + 120
    for proc in rogues.values():
        _waiting(proc, deadline)
    assert downgraded.wait(timeout=120) != 0
    assert "encryption required" in pathlib.Path(downgraded.log).read_text(errors="replace")
    with distributed.Client(cluster.address, timeout=60, set_as_default=False, security=cluster.security) as c:
        assert set(c.scheduler_info()["workers"]) == honest
    for proc in rogues.values():
        cluster.kill(proc)

    import psutil
    spoken = {int(a.rsplit(":", 1)[1]) for a in [cluster.address, *honest]}    # the TLS ports
    for proc in [cluster.scheduler] + cluster.workers:        # bound to the address given, nothing else
        listening = {c.laddr for c in psutil.Process(proc.pid).net_connections("inet")
                     if c.status == psutil.CONN_LISTEN}
        assert listening and {a.ip for a in listening} == {"127.0.0.1"}, listening
        web = [f"http://127.0.0.1:{a.port}" for a in listening if a.port not in spoken]
        assert web, listening                                 # its web server answers /health, nothing more
        assert [urllib.request.urlopen(f"{url}/health").read() for url in web] == [b"ok"] * len(web)
        for page in ("/info/main/workers.html", "/metrics", "/statics/"):
            with pytest.raises(urllib.error.HTTPError, match="404"):
                urllib.request.urlopen(f"{web[0]}{page}")
        listed = json.loads(urllib.request.urlopen(f"{web[0]}/sitemap.json").read())["paths"]   # Dask always lists
        assert set(listed) <= {"/health", "/sitemap.json"}, listed

    made = sorted(p.name for p in certs.iterdir())
    assert made == ["ca.pem", "client-key.pem", "client.pem", "scheduler-key.pem", "scheduler.pem",
                    "worker-key.pem", "worker.pem"]
    assert certs.stat().st_mode & 0o777 == 0o700
    for name in made:
        held = (certs / name).stat()
        assert held.st_uid == os.geteuid()
        assert held.st_mode & 0o777 == (0o600 if name.endswith("-key.pem") else 0o644), name
        assert ("PRIVATE KEY" in (certs / name).read_text()) == name.endswith("-key.pem"), name   # no CA key


# --- grading over TLS, as locally ------------------------------------------------------------------

def test_a_killed_worker_loses_nothing_and_grades_match_a_local_run(course, tls_course, cluster, tmp_path):
    submitted = tmp_path / "submitted"
    made = _small_cohort(course, submitted, mistakes=3, own="killed-worker")
    cluster.ready(workers=2)
    doomed = cluster.workers[-1]
    out = tmp_path / "on-cluster"
    run = _grade(tls_course, submitted, out, "--cluster", cluster.address)
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
              for r in store.load_results(str(local)) for p in r.parts}
    assert scores == {(r.student, p.part): (p.score, p.status, p.reason)
                      for r in store.load_results(str(out)) for p in r.parts}

    again = _grade(tls_course, submitted, out, "--cluster", cluster.address)       # incremental, as locally
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr[-3000:]
    assert "graded now: 0" in stdout and f"kept (unchanged since graded): {len(made)}" in stdout


def test_a_worker_with_another_course_refuses_with_one_line(course, tls_course, course_copy, cluster):
    from autograder.grade import cluster as dask_cluster

    def slower(raw):
        raw["limits"]["time_per_test"] += 1
    other = course_copy(slower)
    cluster.ready(workers=1)
    stale = cluster.add_worker(COURSE_YAML=other.path)
    try:
        with pytest.raises(config.ConfigError) as refused:
            dask_cluster.connect(tls_course, cluster.address)
    finally:
        cluster.kill(stale)
    line = str(refused.value)
    assert "\n" not in line and "refuses to grade" in line and "the client's commit" in line

    expected = dask_cluster.versions(course)          # a task reaching such a worker is refused too
    assert dask_cluster.mismatch(expected, other).startswith("the suites of attention differ")
    assert dask_cluster.mismatch(dict(expected, grader="0" * 12), course).startswith("grader ")
    assert dask_cluster.mismatch(expected, course) is None


def test_a_vanished_scheduler_stops_the_batch_and_resume_finishes_it(course, tls_course, cluster, tmp_path):
    submitted = tmp_path / "submitted"
    made = _small_cohort(course, submitted, mistakes=1, own="vanished-scheduler")
    cluster.ready(workers=1)
    out = tmp_path / "out"
    run = _grade(tls_course, submitted, out, "--cluster", cluster.address)
    _wait_for_results(out, 1, run)
    cluster.kill(cluster.scheduler)
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 130, stderr[-3000:]
    assert f"error: the Dask scheduler at {cluster.address} stopped answering" in stderr
    assert "Traceback" not in stderr
    assert not store.read_journal(str(out))["finished"]
    kept = store.load_results(str(out))
    assert kept and not any(r.grader_error for r in kept)   # never a student's score

    resumed = _grade(tls_course, submitted, out, "--resume")          # locally: the cluster is gone
    stdout, stderr = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, stderr[-3000:]
    _graded_once(out, made)


def test_no_scheduler_is_one_line_and_nothing_graded(tls_course):
    from autograder.grade import cluster as dask_cluster
    port = _free_port()                     # a port nothing listens on
    with pytest.raises(config.ConfigError, match=f"no Dask scheduler answers at tls://127.0.0.1:{port}"):
        dask_cluster.connect(tls_course, f"tls://127.0.0.1:{port}", timeout=2)

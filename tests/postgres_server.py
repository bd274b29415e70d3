"""A throwaway PostgreSQL server, for the gradebook test (tests/test_postgres.py) and bench/term.py.

It runs as an unprivileged user (PostgreSQL refuses root: as root, ``nobody``) on a unix socket in
a folder of its own, never on a network port, and is stopped and removed at the end.
"""

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator


def binaries() -> str | None:
    """The folder of PostgreSQL's initdb and pg_ctl, or None when it is not installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [shutil.which("initdb")]
    return os.path.dirname(found[-1]) if found[-1] else None


def usable() -> str | None:
    """None when a server can be started here, else why not."""
    try:
        import psycopg2  # noqa: F401
    except ImportError:
        return "psycopg2 is not installed: pip install -e '.[postgres]' (make test does)"
    if binaries() is None:
        return "PostgreSQL is not installed (make test installs Debian's postgresql when root)"
    return None


@contextlib.contextmanager
def server(folder: str | None = None) -> Iterator[Callable[[str], str]]:
    """A running server; yields ``make(name)``, which creates database ``name`` on it and returns
    its SQLAlchemy URL."""
    pg = binaries()
    assert pg, usable()
    user = "nobody" if os.geteuid() == 0 else None
    folder = folder or tempfile.mkdtemp(prefix="course-pg-")
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o755)
    data, socket_dir = os.path.join(folder, "data"), os.path.join(folder, "socket")
    os.makedirs(socket_dir)
    if user:
        entry = pwd.getpwnam(user)
        for path in (folder, socket_dir):
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def run(*argv: str) -> None:
        cmd = (["runuser", "-u", user, "--"] if user else []) + list(argv)
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=folder)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"

    def make(name: str) -> str:
        run(os.path.join(pg, "createdb"), "-h", socket_dir, "-U", "grader", name)
        return f"postgresql+psycopg2://grader@/{name}?host={socket_dir}"

    run(os.path.join(pg, "initdb"), "-D", data, "-U", "grader", "--auth=trust", "-E", "UTF8")
    run(os.path.join(pg, "pg_ctl"), "-D", data, "-w", "-l", os.path.join(folder, "server.log"),
        "-o", f"-k {socket_dir} -c listen_addresses=''", "start")
    try:
        yield make
    finally:
        with contextlib.suppress(AssertionError):
            run(os.path.join(pg, "pg_ctl"), "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(folder, ignore_errors=True)

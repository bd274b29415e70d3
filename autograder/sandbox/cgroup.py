"""As root, a cgroup of its own for each sandbox: its processes, its memory, its CPU.

cgroup v1 (the ``pids``, ``memory``, ``cpu``, ``cpuacct`` and ``cpuset`` controllers, each where
this process may write) or v2 (all of them in one folder). The cgroup caps the sandbox's processes
and threads at ``MAX_PROCESSES``, its memory (tmpfs included) and its CPU at ``CPU_CORES`` for
all its processes together, on the cores the grading worker that starts it keeps to (a student's
code cannot widen them, as it could its own affinity), so that one submission's many processes
slow no other sandbox; and it counts the CPU time they use, which the limits of
:class:`selfcheck.student.Student` read.
"""

import os
import signal

MAX_PROCESSES = 64                      # processes and threads per sandbox (as root)
CPU_CORES = 1                           # CPU one sandbox may use, all its processes together (as root)
CPU_PERIOD_US = 100_000                 # the cgroup's accounting period for that share
CONTROLLERS = ("cpu", "cpuset", "memory", "pids")  # what a v2 cgroup's children must be let use


def roots() -> dict[str, str]:
    """{controller: folder under which this process may make a cgroup}: pids, memory, cpu,
    cpuacct and cpuset (cgroup v1), or all of them in one folder (``"v2"``)."""
    found: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as fh:
            mine = {controller: path for line in fh if line.count(":") >= 2
                    for controllers, path in [line.rstrip("\n").split(":", 2)[1:]]
                    for controller in controllers.split(",")}
    except OSError:
        return found
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):          # cgroup v2 only
        base = "/sys/fs/cgroup" + mine.get("", "/")
        if os.access(base, os.W_OK):
            found["v2"] = base
        return found
    for controller in ("pids", "memory", "cpu", "cpuacct", "cpuset"):  # cgroup v1
        base = f"/sys/fs/cgroup/{controller}" + mine.get(controller, "/")
        if os.path.isdir(base) and os.access(base, os.W_OK):
            found[controller] = base
    return found


def delegate(base: str, controllers: tuple[str, ...]) -> None:
    """cgroup v2: let ``base``'s children use ``controllers`` (refused when processes live in
    ``base`` itself and it is not the root: then the limits it cannot give are left out)."""
    try:
        with open(os.path.join(base, "cgroup.controllers")) as fh:
            available = set(fh.read().split())
        with open(os.path.join(base, "cgroup.subtree_control")) as fh:
            missing = (available & set(controllers)) - set(fh.read().split())
        if missing:
            with open(os.path.join(base, "cgroup.subtree_control"), "w") as fh:
                fh.write(" ".join("+" + c for c in sorted(missing)))
    except OSError:
        pass


def _write_if_there(path: str, value: str) -> None:
    """Write ``value`` to a cgroup file that exists (a cgroup without that controller has none);
    one the kernel refuses is left as it was: the cores are a refinement, the other limits stand."""
    if os.path.exists(path):
        try:
            with open(path, "w") as fh:
                fh.write(value)
        except OSError:
            pass


def _cpuset(base: str, folder: str, cores: str) -> bool:
    """cgroup v1: keep ``folder``'s processes to ``cores`` (and to ``base``'s memory nodes, which a
    v1 cpuset needs before a process may join it). False, and the sandbox not put in it, when
    either cannot be set: a process cannot join a cpuset with no cores."""
    if not cores:
        return False
    try:
        with open(os.path.join(base, "cpuset.mems")) as fh:
            mems = fh.read().strip()
        for key, value in (("cpuset.mems", mems), ("cpuset.cpus", cores)):
            with open(os.path.join(folder, key), "w") as fh:
                fh.write(value)
    except OSError:
        return False
    return bool(mems)


class Cgroup:
    """A cgroup (v1 pids, memory, cpu and cpuacct, or v2) capping one sandbox's processes and
    memory, and its CPU at ``CPU_CORES``, and counting the CPU time its processes use."""

    def __init__(self, name: str, memory_bytes: int):
        self.folders: list[str] = []
        self._usage: tuple[str, float] | None = None     # (file, seconds per unit) of the CPU time used
        quota = CPU_CORES * CPU_PERIOD_US
        settings: dict[str, dict[str, object]] = {"v2": {"pids.max": MAX_PROCESSES, "memory.max": memory_bytes, "memory.swap.max": 0,
                           "cpu.max": f"{quota} {CPU_PERIOD_US}"},
                    "pids": {"pids.max": MAX_PROCESSES},
                    "memory": {"memory.limit_in_bytes": memory_bytes},
                    "cpu": {"cpu.cfs_period_us": CPU_PERIOD_US, "cpu.cfs_quota_us": quota},
                    "cpuacct": {}}
        usage = {"v2": ("cpu.stat", 1e-6), "cpuacct": ("cpuacct.usage", 1e-9)}
        cores = ",".join(map(str, sorted(os.sched_getaffinity(0)))) if hasattr(os, "sched_getaffinity") else ""
        try:
            for controller, base in roots().items():
                if controller == "v2":
                    delegate(base, CONTROLLERS)
                folder = os.path.join(base, name)
                os.makedirs(folder, exist_ok=True)
                if controller == "cpuset":
                    if _cpuset(base, folder, cores):
                        self.folders.append(folder)
                    continue
                if os.path.realpath(folder) not in map(os.path.realpath, self.folders):   # co-mounted
                    self.folders.append(folder)
                for key, value in settings[controller].items():
                    path = os.path.join(folder, key)
                    if os.path.exists(path):
                        with open(path, "w") as fh:
                            fh.write(str(value))
                if controller == "v2" and cores:
                    _write_if_there(os.path.join(folder, "cpuset.cpus"), cores)
                if controller in usage:
                    self._usage = (os.path.join(folder, usage[controller][0]), usage[controller][1])
        except OSError:
            self.folders, self._usage = [], None

    def join_paths(self) -> list[str]:
        return [os.path.join(f, "cgroup.procs") for f in self.folders]

    def cpu_seconds(self) -> float:
        """CPU time used by every process that was ever in the cgroup (its folder is reused)."""
        assert self._usage is not None, "a cgroup that counts no CPU time"
        path, unit = self._usage
        with open(path) as fh:
            text = fh.read()
        if path.endswith("cpu.stat"):
            text = next(line.split()[1] for line in text.splitlines() if line.startswith("usage_usec "))
        return int(text) * unit

    def counts_cpu(self) -> bool:
        return self._usage is not None

    def remove(self) -> None:
        """Kill what is left in the cgroup; its folder stays, for the next sandbox of this uid."""
        for folder in self.folders:
            try:
                with open(os.path.join(folder, "cgroup.procs")) as fh:
                    pids = [int(p) for p in fh.read().split()]
            except OSError:
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

"""Where grading's seconds go, per part and per assignment, beside the floor on this machine.

Grades a sample of the bench's cohort in this process (one submission after the other, as
`course grade --jobs 1` does in its worker) with timers around the grader's own steps, each
timer counting its time less that of the timers inside it:

  sandbox set-up             leasing the uid and the cgroup, the binds (autograder/sandbox/)
  starting bubblewrap        starting the process: bubblewrap, then Python in it
  Python and numpy start     waiting for Python and numpy to say "ready": what is left of it once
                             the process, started while pytest collects, is first called
  loading the cells          running the notebook's definitions in the student's process
  stand-ins' process         the reference's process for other parts' functions: its start, until
                             ready, and its load
  pytest start               pytest's configuration and plugins, once per part
  pytest collection          importing and collecting the part's suites
  calls (round trips)        each call into the student's process and back (the student's code
                             runs in there); the training runs of the weighted-attention suite
                             are counted apart
  the grader's own checks    the rest of the suites' run: the reference's answers, comparisons
  writing results, gradebook, exports   once for the sample, after grading

The floors beside them: a sandboxed ``python -c "import numpy"`` per process started, the
quickest round trip measured on this machine per call, for each training run the same run of the
reference's layer in a plain process on one BLAS thread (the compute the checks need), nothing for
the rest but the checks' own milliseconds. A part's floor is one sandboxed start, its calls' round
trips and its training; :func:`report` returns each part's seconds against it (the target: within
3 times). A call's own work beyond the round trip (the scale experiment's loops, and the stand-ins'
calls they make) counts against the part, not in its floor.
"""

import json
import os
import subprocess
import sys
import time
from collections import defaultdict

from _pytest import config as pytest_config, main as pytest_main

from autograder import pipeline, sandbox
from autograder.course import corpus
from autograder.grade import grading, reuse, suites
from autograder.nbgrader import settings
from autograder.records import store
from selfcheck import student as student_module
from selfcheck.program import Program

TRAINING_CALLS = {"short_run"}


class Timers:
    """Exclusive seconds (and counts) per (part, step): a timer started inside another is not
    counted in the outer one."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self.counts = defaultdict(int)
        self.part = "(none)"
        self._stack = []          # [step, started, inner seconds]

    def run(self, step, fn, *args, **kwargs):
        self._stack.append([step, time.perf_counter(), 0.0])
        try:
            return fn(*args, **kwargs)
        finally:
            step, started, inner = self._stack.pop()
            took = time.perf_counter() - started
            self.seconds[self.part, step] += took - inner
            self.counts[self.part, step] += 1
            if self._stack:
                self._stack[-1][2] += took

    def wrap(self, owner, name, step):
        """Time every call of ``owner.name`` as ``step`` (a function of the call's arguments or a name)."""
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            return self.run(step(*args, **kwargs) if callable(step) else step, original, *args, **kwargs)
        setattr(owner, name, timed)
        return original


# the floor of a training run: the reference's run of the same probe and arguments, in a plain
# process on one BLAS thread as the student's process has (the grader's own may have more)
_TRAINING_FLOOR = """
import json, sys, time
from autograder.course import config
from autograder.grade import suites
course, probe_name, name, args, kwargs = json.load(sys.stdin)
course = config.load(course)
probe = __import__(f"selfcheck.probes.{probe_name}", fromlist=[name])
assignment = next(a for a in course.assignments if any(p.id == probe_name for p in a.parts))
namespace = vars(suites.reference_namespace(course, assignment))
getattr(probe, name)(namespace, *args, **kwargs)          # the corpus read once, as in a grading run
runs = []
for _ in range(3):                                        # the quickest of three: the machine is shared
    started = time.perf_counter()
    getattr(probe, name)(namespace, *args, **kwargs)
    runs.append(time.perf_counter() - started)
print(min(runs))
"""


def training_floor(course, call):
    """Seconds of the training run ``call`` ((probe, name, args, kwargs)) on the reference's layer."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=root,
               TINYSHAKESPEARE=corpus.find(course) or "")
    done = subprocess.run([sys.executable, "-c", _TRAINING_FLOOR], input=json.dumps([course.path, *call]),
                          capture_output=True, text=True, cwd=root, check=True, env=env)
    return float(done.stdout.strip().splitlines()[-1])


def _request_step(process, request, **_):
    if request.get("op") == "load":
        return "stand-ins' process (load)" if process.label == "the grader's stand-ins" else "loading the cells"
    return "training runs (calls)" if request.get("name") in TRAINING_CALLS else "calls (round trips)"


def _start_step(process, *_, **__):
    return "stand-ins' process (start)" if process.label == "the grader's stand-ins" else "starting bubblewrap"


def _ready_step(process, *_, **__):
    return ("stand-ins' process (until ready)" if process.label == "the grader's stand-ins"
            else "Python and numpy start (until ready)")


def floors(course, workdir):
    """(seconds of a sandboxed start to "ready" with numpy, seconds of the quickest round trip)."""
    os.makedirs(workdir, exist_ok=True)
    jail = sandbox.jail(course)
    starts, trips = [], []
    for _ in range(3):
        began = time.perf_counter()
        process = student_module.Student(Program(cells=[("c", "import numpy\ndef f(x):\n    return x\n")]),
                                         workdir=workdir, limits=course.limits, jail=jail)
        try:
            process.start_now()
            starts.append(time.perf_counter() - began)
            for _ in range(20):
                began = time.perf_counter()
                process.f(1)
                trips.append(time.perf_counter() - began)
        finally:
            process.close()
    return min(starts), min(trips)


def measure(course, submitted, out, tasks):
    """Timers over grading ``tasks`` in this process, then their results, gradebook and exports."""
    timers = Timers()
    patches = [(student_module.Student, "_spawn", timers.wrap(student_module.Student, "_spawn", _start_step)),
               (student_module.Student, "_load_when_ready",
                timers.wrap(student_module.Student, "_load_when_ready", _ready_step)),
               (type(sandbox.jail(course)), "launch",
                timers.wrap(type(sandbox.jail(course)), "launch", "sandbox set-up")),
               (student_module.Student, "_request",
                timers.wrap(student_module.Student, "_request", _request_step)),
               (pytest_config, "_prepareconfig", timers.wrap(pytest_config, "_prepareconfig", "pytest start")),
               (pytest_main.Session, "perform_collect",
                timers.wrap(pytest_main.Session, "perform_collect", "pytest collection")),
               (suites.pytest, "main", timers.wrap(suites.pytest, "main", "the grader's own checks"))]
    training = timers.training = []           # (probe, name, args, kwargs) of each training call

    def probe(self, module, name, *args, **kwargs):
        if name in TRAINING_CALLS:
            training.append((module, name, args, kwargs))
        return original_probe(self, module, name, *args, **kwargs)
    original_probe = student_module.Student.probe
    patches.append((student_module.Student, "probe", original_probe))
    student_module.Student.probe = probe
    original_run_part = suites.run_part

    def run_part(course_, assignment, part, *args, **kwargs):
        timers.part = f"{assignment.id}/{part.id}"
        return original_run_part(course_, assignment, part, *args, **kwargs)
    suites.run_part = run_part
    kept = os.environ.pop(reuse.STORE, None)      # a smoke run's kept verdicts would time nothing
    settings.write_course_folder(course, out)
    per_submission = defaultdict(float)
    try:
        records = []
        for task in tasks:
            began = time.perf_counter()
            record = grading.grade_task(course, task, "bench")
            per_submission[task.assignment] += time.perf_counter() - began
            records.append(record)
        timers.part = "(after grading)"
        for record in records:
            timers.run("writing results", store.write_result, out, record)
        batch = grading.Batch(records=records, graded=list(records))
        timers.run("gradebook (nbgrader autograde)", pipeline.to_gradebook, course, submitted, out, tasks, batch)
        timers.run("exports and feedback", pipeline.export, course, out, records)
    finally:
        suites.run_part = original_run_part
        if kept is not None:
            os.environ[reuse.STORE] = kept
        for owner, name, original in patches:
            setattr(owner, name, original)
    return timers, per_submission


def report(course, submitted, out, tasks, work):
    """Print the breakdown for ``tasks``: per part, then per assignment, each step beside its floor;
    returns the seconds per submission of each assignment and, per part, (seconds, floor)."""
    start_floor, trip_floor = floors(course, os.path.join(work, "floor"))
    timers, per_submission = measure(course, submitted, out, tasks)
    train_floor = training_floor(course, timers.training[0]) if timers.training else 0.0
    count = defaultdict(int)
    for task in tasks:
        count[task.assignment] += 1
    print(f"\nwhere the time goes: {len(tasks)} submissions graded in one process, seconds per submission; "
          f"floors: a sandboxed start with numpy {start_floor:.3f} s, a round trip {1000 * trip_floor:.2f} ms, "
          f"a training run of the reference's layer {train_floor:.2f} s")
    print(f"  {'part / step':<52} {'s/submission':>12} {'count':>7} {'floor s':>8}")
    parts = {}        # part -> (seconds, floor) per submission
    for group in sorted({part for part, _ in timers.seconds}):
        assignment = group.split("/")[0]
        n = count.get(assignment) or len(tasks)
        steps = {step: s for (part, step), s in timers.seconds.items() if part == group}
        print(f"  {group} ({sum(steps.values()) / n:.2f} s)")
        for step, seconds in sorted(steps.items(), key=lambda kv: -kv[1]):
            calls = timers.counts[group, step]
            floor = {"Python and numpy start (until ready)": calls * start_floor,
                     "stand-ins' process (until ready)": calls * start_floor,
                     "calls (round trips)": calls * trip_floor,
                     "training runs (calls)": calls * train_floor}.get(step, 0.0)
            print(f"    {step:<50} {seconds / n:>12.3f} {calls / n:>7.1f} {floor / n:>8.3f}")
        if group != "(after grading)":
            least = (timers.counts[group, "training runs (calls)"] * train_floor
                     + timers.counts[group, "calls (round trips)"] * trip_floor)
            parts[group] = (sum(steps.values()) / n, start_floor + least / n)
    for assignment, seconds in sorted(per_submission.items()):
        print(f"  {assignment}: {seconds / count[assignment]:.2f} s per submission graded "
              f"({count[assignment]} submissions)")
    return per_submission, parts

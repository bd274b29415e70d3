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
quickest round trip measured on this machine per call, for each call that computes (a training
run, a scale experiment: :data:`COMPUTE_CALLS`) the reference's same call in a plain process on one
BLAS thread (the compute the checks need), nothing for the rest but the checks' own milliseconds.
A part's floor is one sandboxed start, its calls' round trips and its compute; :func:`report`
returns each part's seconds against it (the target: within 3 times). The calls a student's
experiment makes to other parts' functions, answered by the stand-ins' process, are not in the
floor: :func:`report` prints how many the reference's experiment makes and the quickest such round
trip here, the price of keeping the reference out of the student's process.

The sample is graded on one core, the idlest, as a grading worker is (autograder/grade/cores.py).
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
from autograder.grade import cores, grading, reuse, suites
from autograder.nbgrader import settings
from autograder.records import store
from selfcheck import student as student_module, wire
from selfcheck.program import Program, program, read_notebook

# calls that compute what the checks need, each its step: their floor is the reference's same call
COMPUTE_CALLS = {"short_run": "training runs (calls)", "scale_experiment": "experiment runs (calls)"}


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


# the floor of the calls that compute: the reference's same calls (a probe's on its layer, a
# function's on the reference's own), in a plain process on one BLAS thread as the student's process
# has (the grader's own may have more), the quickest of three (the machine is shared); with the
# number of calls that reference makes to the functions ``stand_ins`` names
_COMPUTE_FLOOR = """
import inspect, json, sys, time
from autograder.course import config
from autograder.grade import suites
from selfcheck import wire
course, assignment_id, calls, stand_ins = json.load(sys.stdin)
course = config.load(course)
namespace = vars(suites.reference_namespace(course, course.assignment(assignment_id)))
def runner(probe_name, name, args, kwargs):
    args, kwargs = wire.decode(args), wire.decode(kwargs)
    if probe_name:
        fn = getattr(__import__(f"selfcheck.probes.{probe_name}", fromlist=[name]), name)
        return lambda: fn(namespace, *args, **kwargs)
    fn = inspect.unwrap(namespace[name])                  # not the answers kept from an earlier call
    return lambda: fn(*args, **kwargs)
counted, first = [0], {}
def counting(name, fn):
    def call(*args, **kwargs):
        counted[0] += 1
        first.setdefault(name, (args, kwargs))
        return fn(*args, **kwargs)
    return call
scope = next((inspect.unwrap(v).__globals__ for v in namespace.values() if inspect.isfunction(v)), {})
originals = {name: scope[name] for name in stand_ins if name in scope}
scope.update({name: counting(name, fn) for name, fn in originals.items()})
stand_in_calls = []
for call in calls:                    # once untimed: the corpus read, the stand-ins' calls counted
    before = counted[0]
    runner(*call)()
    stand_in_calls.append(counted[0] - before)
scope.update(originals)
seconds = []
for call in calls:
    run, runs = runner(*call), []
    for _ in range(3):
        started = time.perf_counter()
        run()
        runs.append(time.perf_counter() - started)
    seconds.append(min(runs))
samples = {}                          # a call of each: its arguments, and its seconds here
for name, (args, kwargs) in first.items():
    started = time.perf_counter()
    for _ in range(1000):
        originals[name](*args, **kwargs)
    samples[name] = [wire.encode(list(args)), wire.encode(kwargs), (time.perf_counter() - started) / 1000]
print(json.dumps({"seconds": seconds, "stand_in_calls": stand_in_calls, "samples": samples}))
"""


def compute_floor(course, assignment, calls, stand_ins=()):
    """{"seconds": [of each call of ``calls`` ((probe or None, name, wire-encoded args and kwargs))
    made on the reference's side], "stand_in_calls": [how many calls each made to ``stand_ins``],
    "samples": {stand-in: [its first call's args, kwargs, seconds of such a call here]}}."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=root,
               TINYSHAKESPEARE=corpus.find(course) or "")
    done = subprocess.run([sys.executable, "-c", _COMPUTE_FLOOR],
                          input=json.dumps([course.path, assignment, calls, list(stand_ins)]),
                          capture_output=True, text=True, cwd=root, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


STAND_INS_START = "stand-ins' process (start)"


def _start_step(process, *_, **__):
    return STAND_INS_START if process.label == "the grader's stand-ins" else "starting bubblewrap"


def _ready_step(process, *_, **__):
    return ("stand-ins' process (until ready)" if process.label == "the grader's stand-ins"
            else "Python and numpy start (until ready)")


def floors(course, workdir):
    """(seconds of a sandboxed start to "ready" with numpy, seconds of the quickest round trip)."""
    os.makedirs(workdir, exist_ok=True)
    jail = sandbox.jail(course)
    starts, trips = [], []
    with cores.on_idlest():           # on one core, as the sample is graded
        for _ in range(3):
            _floor_run(course, workdir, jail, starts, trips)
    return min(starts), min(trips)


def _floor_run(course, workdir, jail, starts, trips):
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


def measure(course, submitted, out, tasks):
    """Timers over grading ``tasks`` in this process, then their results, gradebook and exports;
    ``timers.compute`` lists (part, (probe, name, args, kwargs)) of each call that computes."""
    timers = Timers()
    compute = timers.compute = []

    def request_step(process, request, **_):
        if request.get("op") == "load":
            return "stand-ins' process (load)" if process.label == "the grader's stand-ins" else "loading the cells"
        step = COMPUTE_CALLS.get(request.get("name"))
        if step is None:
            return "calls (round trips)"
        compute.append((timers.part, (request.get("probe"), request["name"], request["args"], request["kwargs"])))
        return step
    patches = [(student_module.Student, "_spawn", timers.wrap(student_module.Student, "_spawn", _start_step)),
               (student_module.Student, "_load_when_ready",
                timers.wrap(student_module.Student, "_load_when_ready", _ready_step)),
               (type(sandbox.jail(course)), "launch",
                timers.wrap(type(sandbox.jail(course)), "launch", "sandbox set-up")),
               (student_module.Student, "_request",
                timers.wrap(student_module.Student, "_request", request_step)),
               (pytest_config, "_prepareconfig", timers.wrap(pytest_config, "_prepareconfig", "pytest start")),
               (pytest_main.Session, "perform_collect",
                timers.wrap(pytest_main.Session, "perform_collect", "pytest collection")),
               (suites.pytest, "main", timers.wrap(suites.pytest, "main", "the grader's own checks"))]
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
        with cores.on_idlest():               # one core, as a grading worker has
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


def _stand_in_names(course, group):
    """The functions of other parts that part ``group`` (assignment/part) calls."""
    assignment = course.assignment(group.split("/")[0])
    part = assignment.part(group.split("/")[1])
    release = read_notebook(course.release(assignment, assignment.notebook))
    prog = program(release, release, own=set(part.cells), stand_ins=assignment.stand_in_cells(part))
    return [name for cell in prog.cells if cell[1] is None for name in cell[2]]


def _compute_floors(course, compute):
    """({(part, step): floor seconds of its calls that compute}, {part: the calls its reference
    makes to other parts' functions}, {part: a sample of those calls}): a training run's floor is
    the first's (the runs differ in variant, not in cost), every other call's its own."""
    floors_, stand_in_calls, samples = defaultdict(float), defaultdict(int), {}
    for group in sorted({group for group, _ in compute}):
        calls = [call for g, call in compute if g == group]
        key = {json.dumps(call, sort_keys=True): call for call in calls if call[1] != "short_run"}
        first = [call for call in calls if call[1] == "short_run"][:1]
        with cores.on_idlest():       # on one core, as the sample is graded
            measured = compute_floor(course, group.split("/")[0], first + list(key.values()),
                                     _stand_in_names(course, group))
        found = dict(zip(["training"] * len(first) + list(key), zip(measured["seconds"], measured["stand_in_calls"])))
        for call in calls:
            seconds, calls_out = found["training" if call[1] == "short_run" else json.dumps(call, sort_keys=True)]
            floors_[group, COMPUTE_CALLS[call[1]]] += seconds
            stand_in_calls[group] += calls_out
        samples[group] = measured["samples"]
    return floors_, stand_in_calls, samples


_TRIPS = """
def trips(name, args, kwargs, n):
    import time
    call = globals()[name]
    call(*args, **kwargs)
    started = time.perf_counter()
    for _ in range(n):
        call(*args, **kwargs)
    return (time.perf_counter() - started) / n
"""


def stand_in_trip(course, group, samples, workdir):
    """Seconds of one call to the stand-ins' process beyond its own compute: the quickest of three
    runs of a thousand calls from a sandboxed student's process, on one core as in grading."""
    name, (args, kwargs, local) = next(iter(samples.items()))
    assignment = course.assignment(group.split("/")[0])
    jail = sandbox.jail(course)
    os.makedirs(workdir, exist_ok=True)
    prog = Program(cells=[("stand-in", None, [name]), ("trips", _TRIPS)])
    with cores.on_idlest():
        process = student_module.Student(prog, workdir=workdir, limits=course.limits, jail=jail,
                                         stand_ins=suites.StandIns(course, assignment, workdir, jail))
        try:
            process.start_now()
            each = min(process.trips(name, wire.decode(args), wire.decode(kwargs), 1000) for _ in range(3))
        finally:
            process.close()
    return max(0.0, each - local)


def report(course, submitted, out, tasks, work):
    """Print the breakdown for ``tasks``: per part, then per assignment, each step beside its floor;
    returns the seconds per submission of each assignment and, per part, (seconds, floor, why it
    is above the floor where the reason is measured here)."""
    start_floor, trip_floor = floors(course, os.path.join(work, "floor"))
    timers, per_submission = measure(course, submitted, out, tasks)
    compute_floors, stand_in_calls, samples = _compute_floors(course, timers.compute)
    count = defaultdict(int)
    for task in tasks:
        count[task.assignment] += 1
    print(f"\nwhere the time goes: {len(tasks)} submissions graded in one process on one core, seconds per "
          f"submission; floors: a sandboxed start with numpy {start_floor:.3f} s, a round trip "
          f"{1000 * trip_floor:.2f} ms, and for a call that computes: the reference's same call in a plain "
          f"process on one BLAS thread (\"-\": a step with no floor of its own)")
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
                     "calls (round trips)": calls * trip_floor}.get(step, compute_floors.get((group, step)))
            shown_count = f"{calls:>7}" if group == "(after grading)" else f"{calls / n:>7.1f}"
            shown_floor = "-" if floor is None else f"{floor / n:.3f}"
            print(f"    {step:<50} {seconds / n:>12.3f} {shown_count} {shown_floor:>8}")
        if group != "(after grading)":
            least = (sum(compute_floors.get((group, step), 0.0) for step in COMPUTE_CALLS.values())
                     + timers.counts[group, "calls (round trips)"] * trip_floor)
            why = ""
            answered = timers.counts[group, STAND_INS_START]
            if stand_in_calls[group] and samples.get(group):
                trip = stand_in_trip(course, group, samples[group], os.path.join(work, "stand-ins"))
                print(f"    (other parts' functions: the reference's experiment calls them {stand_in_calls[group] / n:,.0f} "
                      f"times a submission; where those parts lost marks ({answered} of {n} submissions here) the "
                      f"stand-ins' process answers each, a round trip between two sandboxes of at least "
                      f"{1e6 * trip:.0f} us here beyond its compute, {stand_in_calls[group] / n * trip:.2f} s a "
                      f"submission, which its floor does not count)")
                if answered:
                    why = (f"the stand-ins' round trips, {stand_in_calls[group] * answered / n * trip / n:.2f} s of its "
                           f"{sum(steps.values()) / n:.2f} s a submission here (at least {1e6 * trip:.0f} us each, "
                           f"{stand_in_calls[group] / n:,.0f} a submission they answer): the price of keeping "
                           f"the reference out of the student's process")
            parts[group] = (sum(steps.values()) / n, start_floor + least / n, why)
    for assignment, seconds in sorted(per_submission.items()):
        print(f"  {assignment}: {seconds / count[assignment]:.2f} s per submission graded "
              f"({count[assignment]} submissions)")
    return per_submission, parts

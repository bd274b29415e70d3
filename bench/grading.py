"""How fast a whole course grades, against plain nbgrader measured in the same run.

Builds a synthetic cohort (at least 60 submissions over every assignment in
course.yaml: the reference, the untouched stub, every mistake and every
alternative correct solution of parts/<part>/mistakes.py, round-robin) and times, one
after the other on the same machine:

  baseline     plain `nbgrader autograde <assignment>` over the same notebooks, one
               process per assignment, every notebook executed in a kernel (its fastest
               mode: no per-student processes; `run_*` experiment cells tagged
               skip-execution so kernels do not train models);
  --jobs 1     `course grade` with one worker (hidden and public suites, every part in
               a fresh isolated student process, gradebook, exports, feedback);
  --jobs N     the same with N workers (default: the machine's cores);
  self-check   `pytest` in a released assignment folder holding the solved notebook,
               as a student runs it: median wall time of several runs;
  similarity   the cohort report's similarity flags (read, fingerprint, compare every
               assignment's hand-ins) for this cohort and for one of 300 students per
               assignment (synthetic notebooks, never graded).
  Dask         `course grade --cluster` on a `dask scheduler` with one, then two, local
               `dask worker` processes (one thread each): the scaling efficiency of two
               workers (target: at least 85% of linear) and the overhead of going through
               Dask against local --jobs 1 and --jobs 2 (target: at most 10%).

It prints seconds per submission and each one's ratio to the baseline. The
machine is shared and noisy: read the ratios, not the absolute seconds.

It ends with where the time goes (bench/breakdown.py) and "the figures to reach", each with
its target and whether it is met. `--smoke` is the same on one submission per assignment, graded once
(--jobs 1), one self-check run, no Dask and a small similarity cohort: `make test` runs it so it cannot break,
and its `course grade` takes the verdicts the tests keep (``$COURSE_GRADE_CACHE``), so a smoke run's
seconds are not figures; without --smoke every part is graded for real.

    python bench/grading.py [--students N] [--jobs N] [--selfcheck-runs N] [--keep DIR] [--similarity-only] [--smoke]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from autograder.course import config
from autograder.grade import discovery, reuse  # noqa: E402
from autograder.mistakes import cohort
from autograder.report import cohort_analysis  # noqa: E402
from selfcheck.program import grade_id  # noqa: E402

BIN = os.path.dirname(sys.executable)


def variants(course, assignment):
    """(label, notebook) for the reference, the stub, every mistake and every correct variant."""
    found = [("reference", cohort.solved(course, assignment)), ("stub", cohort.stub(course, assignment))]
    for part in assignment.parts:
        mistakes, correct = cohort.catalogue(course, part.id)
        for name, entry in mistakes.items():
            found.append((f"mistake:{name}", cohort.solved(course, assignment, entry["cells"])))
        for name, cells in correct.items():
            found.append((f"correct:{part.id}:{name}", cohort.solved(course, assignment, cells)))
    return found


def build_cohort(course, folder, minimum):
    """``folder/<student>/<assignment>/<notebook>``; returns {(student, assignment): label}."""
    per_student = len(course.assignments)
    students = -(-minimum // per_student)
    made = {}
    for assignment in course.assignments:
        options = variants(course, assignment)
        for i in range(students):
            label, nb = options[i % len(options)]
            student = f"s{i:03d}"
            cohort.write(nb if label == "stub" else cohort.own(nb, student), folder, student, assignment)
            made[student, assignment.id] = label
    return made


def run(cmd, cwd, env=None):
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        sys.stderr.write(f"$ {' '.join(cmd)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}\n")
    return seconds, proc


def _env():
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def baseline(course, submitted, work):
    """Plain nbgrader: generate, then autograde each assignment in one process, kernels executing."""
    folder = os.path.join(work, "nbgrader-baseline")
    os.makedirs(folder)
    with open(os.path.join(folder, "nbgrader_config.py"), "w") as fh:
        fh.write(f"c = get_config()  # noqa: F821\n"
                 f"c.CourseDirectory.root = {folder!r}\n"
                 f"c.CourseDirectory.course_id = {course.course_id!r}\n"
                 f"c.CourseDirectory.source_directory = {os.path.join(ROOT, 'solutions')!r}\n"
                 f"c.CourseDirectory.release_directory = {os.path.join(folder, 'release')!r}\n"
                 f"c.Execute.timeout = {int(max(course.limits.time_per_test, 1))}\n")
    shutil.copytree(submitted, os.path.join(folder, "submitted"))
    for path in _notebooks(os.path.join(folder, "submitted")):
        with open(path) as fh:
            nb = json.load(fh)
        for cell in nb["cells"]:
            if (grade_id(cell) or "").startswith("run_"):
                tags = cell.setdefault("metadata", {}).setdefault("tags", [])
                if "skip-execution" not in tags:
                    tags.append("skip-execution")
        with open(path, "w") as fh:
            json.dump(nb, fh)
    env = _env()
    for assignment in course.assignments:
        _, proc = run([os.path.join(BIN, "nbgrader"), "generate_assignment", assignment.id, "--force"],
                      folder, env)
        if proc.returncode != 0:
            raise SystemExit("nbgrader generate_assignment failed for the baseline")
    seconds = {}
    for assignment in course.assignments:
        took, _ = run([os.path.join(BIN, "nbgrader"), "autograde", assignment.id, "--force"], folder, env)
        seconds[assignment.id] = took      # nbgrader exits 1 when any notebook errors: stubs do; time counts anyway
    graded = len(_notebooks(os.path.join(folder, "autograded")))
    return seconds, graded


def _notebooks(folder):
    return [os.path.join(d, f) for d, _, files in os.walk(folder) for f in files if f.endswith(".ipynb")
            and ".ipynb_checkpoints" not in d]


def ours(submitted, work, jobs):
    out = os.path.join(work, f"course-jobs{jobs}")
    took, proc = run([os.path.join(BIN, "course"), "grade", submitted, "--out", out, "--jobs", str(jobs)],
                     ROOT, _env())
    if proc.returncode != 0:
        raise SystemExit(f"course grade --jobs {jobs} failed")
    import glob
    results = glob.glob(os.path.join(out, "results", "*", "*.json"))
    in_gradebook = len(_notebooks(os.path.join(out, "autograded")))
    if in_gradebook != len(results):
        print(f"  note: nbgrader recorded {in_gradebook} of the {len(results)} results (see its message above)")
    shares = {}
    for path in results:
        with open(path) as fh:
            record = json.load(fh)
        shares[record["assignment"]] = shares.get(record["assignment"], 0.0) + float(record.get("seconds") or 0)
    total = sum(shares.values()) or 1.0
    return took, len(results), {aid: took * share / total for aid, share in shares.items()}


def on_dask(submitted, work, workers):
    """Seconds of `course grade --cluster` with ``workers`` local Dask workers, over mutual TLS with
    a set of `course cluster --certs`, started as docs/how-to/cluster.md says (None without Dask)."""
    try:
        from distributed import Client

        from autograder.grade import cluster as dask_cluster, cluster_certs
    except ImportError:
        return None
    import signal
    import socket

    import yaml
    folder = os.path.join(work, f"dask-{workers}")
    made = cluster_certs.make(os.path.join(folder, "certs"), "bench")

    def tls(role):
        return ["--tls-ca-file", made["ca"], "--tls-cert", made[role][0], "--tls-key", made[role][1]]
    here = os.path.join(folder, "course")            # this course, with course.yaml's cluster_tls
    os.makedirs(here)
    for name in os.listdir(ROOT):
        if name != "course.yaml":
            os.symlink(os.path.join(ROOT, name), os.path.join(here, name))
    with open(os.path.join(ROOT, "course.yaml")) as fh:
        raw = yaml.safe_load(fh)
    raw["cluster_tls"] = {"ca": made["ca"], "cert": made["client"][0], "key": made["client"][1]}
    with open(os.path.join(here, "course.yaml"), "w") as fh:
        yaml.safe_dump(raw, fh, sort_keys=False)
    course = config.load(os.path.join(here, "course.yaml"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tls://127.0.0.1:{port}"
    dask = os.path.join(BIN, "dask")
    logs = open(os.path.join(work, f"dask-{workers}.log"), "ab")
    procs = [subprocess.Popen([dask, "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard", "--dashboard-address", "127.0.0.1:0", *tls("scheduler")],
                              stdout=logs, stderr=logs, start_new_session=True,
                              env=dict(_env(), DASK_TEMPORARY_DIRECTORY=tempfile.mkdtemp(dir=folder),
                                       DASK_DISTRIBUTED__SCHEDULER__HTTP__ROUTES="['distributed.http.health']"))]
    try:
        procs += [subprocess.Popen([dask, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
                                    "--no-dashboard", "--dashboard-address", "127.0.0.1:0",
                                    "--local-directory", tempfile.mkdtemp(dir=folder), *tls("worker")],
                                   stdout=logs, stderr=logs, start_new_session=True, env=_env())
                  for _ in range(workers)]
        with Client(address, timeout=60, set_as_default=False,
                    security=dask_cluster.security(course, address)) as client:
            client.wait_for_workers(workers, timeout=120)
        out = os.path.join(work, f"course-dask{workers}")
        took, proc = run([os.path.join(BIN, "course"), "--config", course.path, "grade", submitted, "--out", out,
                          "--cluster", address], ROOT, _env())
        if proc.returncode != 0:
            raise SystemExit(f"course grade --cluster with {workers} worker(s) failed")
        return took
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def selfcheck(course, work, runs):
    """Median wall seconds of `pytest` in each released folder holding the solved notebook."""
    found = {}
    for assignment in course.assignments:
        folder = os.path.join(work, "student", assignment.id)
        shutil.copytree(course.release(assignment), folder, ignore=shutil.ignore_patterns("__pycache__"))
        path = cohort.write(cohort.solved(course, assignment), os.path.join(work, "student-tmp"), "me",
                            assignment)
        shutil.copy(path, os.path.join(folder, assignment.notebook))
        times = []
        for _ in range(runs):
            took, proc = run([sys.executable, "-m", "pytest", "-q"], folder, _env())
            if proc.returncode != 0:
                raise SystemExit(f"the self-check failed on the solved {assignment.id}")
            times.append(took)
        found[assignment.id] = statistics.median(times)
    return found


def similarity_time(course, submitted):
    """(wall seconds, CPU seconds, pairs flagged, groups) of the cohort report's similarity flags over ``submitted``."""
    started, cpu = time.monotonic(), time.process_time()
    pairs = groups = 0
    for assignment in course.assignments:
        students = [s for s in sorted(os.listdir(submitted)) if os.path.isdir(os.path.join(submitted, s, assignment.id))]
        found, _ = cohort_analysis.similar_groups(course, assignment, students, submitted)
        pairs += sum(len(group.pairs) for group in found)
        groups += len(found)
    return time.monotonic() - started, time.process_time() - cpu, pairs, groups


def similarity_bench(course, submitted, work, n, per=300):
    """Print the similarity time for this cohort and for ``per`` students per assignment."""
    large = os.path.join(work, f"submitted-{per}")
    build_cohort(course, large, per * len(course.assignments))
    for label, folder, count in ((f"this cohort ({n} submissions)", submitted, n),
                                 (f"{per} students per assignment ({per * len(course.assignments)} submissions)",
                                  large, per * len(course.assignments))):
        seconds, cpu, pairs, groups = similarity_time(course, folder)
        print(f"similarity flags, {label}: {seconds:.2f} s wall, {cpu:.2f} s CPU "
              f"({1000 * cpu / count:.1f} ms CPU per submission; {pairs} pairs in {groups} groups flagged: "
              f"the synthetic students are the catalogue's notebooks, the known ways to write it)", flush=True)


def figure(label, value, target, met, unit="x", why="", judged=True):
    """One line of "the figures to reach": the value, its target and whether it is met (when not,
    ``why``, measured in the same run, on the line below); a smoke run's values are not ``judged``."""
    shown = "not measured" if value is None else (f"{value:.0f}%" if unit == "%" else f"{value:.2f}{unit}")
    verdict = "" if value is None else ("(smoke run)" if not judged else "met" if met else "NOT MET")
    print(f"  {label:<88} {shown:>13}  target {target:<10} {verdict}")
    if judged and value is not None and not met:
        print(f"    why: {why or 'no cause measured in this run: see where the time goes, above'}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=60, help="at least this many submissions")
    parser.add_argument("--jobs", type=int, default=2, help="the workers of the second local run (the targets are "
                                                            "for 2)")
    parser.add_argument("--selfcheck-runs", type=int, default=5)
    parser.add_argument("--keep", default=None, help="keep the working folders here")
    parser.add_argument("--similarity-only", action="store_true", help="time the similarity flags only")
    parser.add_argument("--smoke", action="store_true",
                        help="a smoke run: one submission per assignment, graded once, one self-check run, "
                             "no Dask, a small similarity cohort")
    args = parser.parse_args(argv)
    if args.smoke:
        args.students, args.selfcheck_runs = min(args.students, 3), 1
    else:
        os.environ.pop(reuse.STORE, None)     # figures: every part graded for real
    course = config.load()
    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="bench-grading-")
    os.makedirs(work, exist_ok=True)
    submitted = os.path.join(work, "submitted")
    if os.path.exists(submitted):
        shutil.rmtree(submitted)
    made = build_cohort(course, submitted, args.students)
    kinds = {}
    for label in made.values():
        kind = label.split(":")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    n = len(made)
    print(f"cohort: {n} submissions over {len(course.assignments)} assignment(s) "
          f"({', '.join(a.id for a in course.assignments)}); "
          + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())), flush=True)
    print(f"machine: {os.cpu_count()} cores; working folder {work}", flush=True)
    similarity_per = 3 if args.smoke else 300
    if args.similarity_only:
        similarity_bench(course, submitted, work, n, similarity_per)
        return 0

    print("timing plain nbgrader autograde (baseline) ...", flush=True)
    base_by, base_graded = baseline(course, submitted, work)
    base = sum(base_by.values())
    print("timing course grade --jobs 1 ...", flush=True)
    one, one_graded, one_by = ours(submitted, work, 1)
    many, many_graded = None, None          # a smoke run times --jobs 1 alone
    if not args.smoke:
        print(f"timing course grade --jobs {args.jobs} ...", flush=True)
        many, many_graded, _ = ours(submitted, work, args.jobs)
    print("timing the self-check ...", flush=True)
    checks = selfcheck(course, work, args.selfcheck_runs)
    dask = {1: None, 2: None}
    if not args.smoke:
        print("timing course grade --cluster on 1 and 2 local Dask workers ...", flush=True)
        dask = {w: on_dask(submitted, work, w) for w in (1, 2)}
    two_local = None if args.smoke else (one if args.jobs == 1 else (many if args.jobs == 2 else ours(submitted, work, 2)[0]))

    rows = [("nbgrader autograde, 1 process (baseline)", base, base_graded),
            ("course grade --jobs 1", one, one_graded)]
    rows += [] if args.smoke else [(f"course grade --jobs {args.jobs}", many, many_graded)]
    print()
    print(f"{'':<42} {'wall s':>8} {'s/submission':>13} {'vs baseline':>12} {'notebooks':>10}")
    for label, seconds, graded in rows:
        print(f"{label:<42} {seconds:>8.1f} {seconds / n:>13.3f} {seconds / base:>11.2f}x {graded:>10}")
    if args.smoke:
        print(f"course grade --jobs {args.jobs}: not timed in a smoke run")
    else:
        print(f"{'speed-up of --jobs ' + str(args.jobs) + ' over --jobs 1':<42} {'':>8} {'':>13} "
              f"{one / many:>11.2f}x")
    for aid, seconds in base_by.items():
        ours_share = one_by.get(aid)
        print(f"  {aid}: nbgrader {seconds:.1f} s, course grade --jobs 1 {ours_share or 0:.1f} s "
              "(its wall time shared out by the records' grading seconds)")
    print()
    for aid, seconds in checks.items():
        print(f"self-check (pytest in released {aid}/, solved): median {seconds:.2f} s over {args.selfcheck_runs} runs")
    efficiency = overheads = None
    if dask[1] is None:
        print("\nDask: " + ("not timed in a smoke run" if args.smoke else
                            "not installed (pip install -e '.[cluster]'; make bench does), so not measured"))
    else:
        efficiency = dask[1] / (2 * dask[2])
        overheads = [dask[1] / one - 1, dask[2] / two_local - 1]
        print(f"\n{'':<42} {'wall s':>8} {'s/submission':>13} {'vs local':>9}")
        for label, seconds, local in (("course grade --cluster, 1 Dask worker", dask[1], one),
                                      ("course grade --cluster, 2 Dask workers", dask[2], two_local)):
            print(f"{label:<42} {seconds:>8.1f} {seconds / n:>13.3f} {seconds / local:>8.2f}x")
    print()
    similarity_bench(course, submitted, work, n, similarity_per)

    from breakdown import report            # noqa: E402 - beside this script
    sample = [t for t in discovery.find_submissions(course, submitted)
              if t.student in (("s000",) if args.smoke else ("s000", "s002"))]
    _, parts = report(course, submitted, os.path.join(work, "breakdown"), sample, work)

    print("\nthe figures to reach (ratios within this run; the machine is shared: read them, not the seconds)"
          + ("\n  a smoke run: one reference hand-in per assignment, --jobs 1 alone; its values are not figures"
             if args.smoke else ""))
    judged = not args.smoke
    above = [f"{part} {seconds / floor:.1f}x its floor" + (f" ({why})" if why else "")
             for part, (seconds, floor, why) in parts.items() if seconds > 3 * floor]
    why_grading = ("the parts above 3 times their floor: " + "; ".join(above)) if above else (
        "every part is within 3 times its floor (where the time goes, above)")
    figure("course grade --jobs 1 against plain nbgrader", one / base, "<= 1.0x", one <= base,
           why=why_grading, judged=judged)
    figure("course grade --jobs 2 against plain nbgrader", None if two_local is None else two_local / base,
           "<= 0.5x", two_local is not None and two_local <= 0.5 * base, why=why_grading, judged=judged)
    for aid in ("attention", "tiny_transformer"):
        if aid in base_by and aid in one_by:
            ratio = one_by[aid] / base_by[aid]
            stand_ins = "; ".join(f"{part}: {why}" for part, (_, _, why) in parts.items() if part.startswith(aid + "/") and why)
            figure(f"{aid}: course grade --jobs 1 against plain nbgrader", ratio, "<= 0.5x", ratio <= 0.5,
                   why=stand_ins, judged=judged)
    for aid, seconds in checks.items():
        figure(f"self-check in released {aid}/ (median wall)", seconds, "< 1 s", seconds < 1.0, " s", judged=judged)
    for part, (seconds, floor, why) in parts.items():
        figure(f"{part}: against its floor (start, round trips, compute)", seconds / floor,
               "<= 3.0x", seconds <= 3 * floor, why=why, judged=judged)
    figure("Dask, 2 workers: scaling efficiency", None if efficiency is None else 100 * efficiency, ">= 85%",
           efficiency is not None and efficiency >= 0.85, "%", judged=judged)
    figure("Dask: overhead against local (worse of 1 and 2 workers)",
           None if overheads is None else 100 * max(overheads), "<= 10%",
           overheads is not None and max(overheads) <= 0.10, "%", judged=judged)
    print("  (the training step against PyTorch eager: bench/train_step.py, next)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How long the serial stages after grading take: the gradebook (nbgrader's autograde) and the
exports, feedback pages and cohort report, per submission.

`course grade --jobs N` grades in worker processes, then fills the gradebook and writes every
export in one process; on a big cohort that part decides how far more workers help. This
builds a cohort once (bench/grading.py's, ``--students`` submissions over every assignment),
grades it once with ``course grade``, then times, in a fresh process each run (nothing cached
from an earlier run), ``pipeline.to_gradebook`` of every submission (as ``--force`` does) and
``pipeline.export``; the least of ``--runs`` runs, wall-clock and this process's CPU time, since
the machine is shared. ``--profile``
writes a cProfile of each stage beside the cohort (``<stage>.prof``) and prints the calls that
cost most.

    python bench/serial_stages.py [--students N] [--runs N] [--keep DIR] [--profile]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def prepare(folder: str, students: int) -> None:
    """``folder/submitted`` (the cohort) graded into ``folder/out``, unless that was done before."""
    from autograder import config
    from grading import build_cohort
    submitted, out = os.path.join(folder, "submitted"), os.path.join(folder, "out")
    if os.path.exists(os.path.join(out, "totals.csv")):
        return
    build_cohort(config.load(), submitted, students)
    cmd = [os.path.join(os.path.dirname(sys.executable), "course"), "grade", submitted, "--out", out, "--jobs", "2"]
    started = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    print(f"graded {students} submissions in {time.monotonic() - started:.0f} s")


def one_run(folder: str, profile: bool) -> dict:
    """In this process: every submission into the gradebook, then every export; seconds of each."""
    import cProfile

    from autograder import config, grading, pipeline, store
    course = config.load()
    submitted, out = os.path.join(folder, "submitted"), os.path.join(folder, "out")
    tasks = grading.find_submissions(course, submitted)
    records = store.load_results(out)
    batch = grading.Batch(records=records, graded=list(records))      # as --force: every notebook again
    seconds = {}
    for stage, call in (("to_gradebook", lambda: pipeline.to_gradebook(course, submitted, out, tasks, batch)),
                        ("export", lambda: pipeline.export(course, out, store.load_results(out)))):
        profiler = cProfile.Profile() if profile else None
        started, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        warnings = call()
        if profiler:
            profiler.disable()
            profiler.dump_stats(os.path.join(folder, f"{stage}.prof"))
        seconds[stage] = time.perf_counter() - started
        seconds[f"{stage} cpu"] = time.process_time() - cpu
        assert not warnings, warnings
    seconds["submissions"] = len(tasks)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30, help="submissions in the cohort (over every assignment)")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes timed; the least is shown")
    parser.add_argument("--keep", help="the cohort's folder, kept (and reused when already graded)")
    parser.add_argument("--profile", action="store_true", help="write and summarise a cProfile of each stage")
    parser.add_argument("--one-run", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one_run:
        print(json.dumps(one_run(args.one_run, args.profile)))
        return
    folder = args.keep or tempfile.mkdtemp(prefix="serial-stages-")
    os.makedirs(folder, exist_ok=True)
    prepare(folder, args.students)
    runs = []
    for _ in range(args.runs):
        cmd = [sys.executable, os.path.abspath(__file__), "--one-run", folder] + (["--profile"] if args.profile else [])
        done = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    n = runs[0]["submissions"]
    for stage in ("to_gradebook", "export"):
        each = sorted(r[stage] for r in runs)
        cpu = min(r[f"{stage} cpu"] for r in runs)
        print(f"{stage:13s} {each[0] / n:6.3f} s per submission, {cpu / n:6.3f} s of CPU (least of {len(each)} "
              f"runs: {', '.join(f'{s:.1f}' for s in each)} s for {n})")
    if args.profile:
        import pstats
        for stage in ("to_gradebook", "export"):
            print(f"\n--- {stage} (the last run), by cumulative time")
            pstats.Stats(os.path.join(folder, f"{stage}.prof")).sort_stats("cumulative").print_stats(25)
    print(f"cohort: {folder}")


if __name__ == "__main__":
    main()

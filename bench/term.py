"""A term at the size of a real course: what each stage after grading costs at 60, 600 and 2,000
students, and how it grows.

bench/grading.py measures grading a hand-in; this measures what comes after it. A sample is
graded once by ``course grade``: per assignment the reference and correct variants, catalogued
mistakes, the untouched stub, a notebook that is not JSON and one that calls ``sys.exit``. A term
of N students over every assignment is then made from the sample, never graded again: each hand-in
is a sampled one under the student's id, through the course's own record store (its notebook and
time in ``submitted/``, its record in ``results/`` with any earlier one in the history, its staged
and autograded copies, its rows of nbgrader's gradebook), in the shares of :data:`SHARES`; 10% of
hand-ins are late (an extension covers one student), 15% were handed in twice, and a TA has graded
70% of the written answers. Then, at each N, each in a process of its own (whose peak memory is
the grader's):

  exports      ``pipeline.export`` over every record, each step timed (reading the gradebook, late
               penalties, the roster, parts.csv, totals.csv, Gradescope, the LMS files, nbgrader's
               grades.csv, the feedback pages with their written answers, the cohort report)
  similarity   the cohort report's similarity flags alone, over every assignment
  status       ``course status``; history: ``course history <student>``
  gradebook    a batch of 60 new hand-ins into the gradebook of N (``course grade``'s stage 4,
               nbgrader's autograde, the hand-ins shared among two processes), per hand-in; then
               another in one process, and in it nbgrader's autograde alone (the floor)
  regrade      ``course grade --student <one> --force``: one student's notebooks graded again,
               then the gradebook and every export; the grading itself shown beside it

It prints each stage's seconds at every N, its growth exponent between the sizes (1 is linear,
N log N about 1.15), its seconds per hand-in at the largest N, and the targets, met or NOT MET.
With ``--db postgres`` (or ``both``) the gradebook is on a throwaway PostgreSQL server.

    python bench/term.py [--sizes 60,600,2000] [--db sqlite|postgres|both] [--keep DIR] [--smoke]
"""

import argparse
import contextlib
import dataclasses
import datetime
import hashlib
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.dirname(os.path.abspath(__file__))]

from autograder import status
from autograder.course import config
from autograder.grade import reuse, submission_time  # noqa: E402
from autograder.mistakes import cohort
from autograder.records import store

BIN = os.path.dirname(sys.executable)
SHARES = {"correct": 0.55, "mistaken": 0.25, "stub": 0.05, "hostile": 0.05, "missing": 0.10}
LATE, RESUBMITTED, HAND_GRADED = 0.10, 0.15, 0.70
DUE = datetime.datetime(2026, 11, 20, 23, 59)
NEW_HAND_INS = 60          # the gradebook batch (its fixed costs, registering and starting workers, shared)
PER_HAND_IN = 0.05         # seconds, every stage after grading together, at the largest N
EXPORT_STEPS = ("reading the gradebook", "late penalties", "roster export", "parts export",
                "totals export", "gradescope export", "LMS export", "nbgrader export", "feedback export",
                "report export")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- the sample, graded once --------------------------------------------------------------------

def build_sample(course, folder, smoke):
    """``folder/submitted`` graded into ``folder/out`` (unless done before); {assignment: {kind: [student]}}."""
    kinds_path = os.path.join(folder, "kinds.json")
    if os.path.exists(kinds_path):
        with open(kinds_path) as fh:
            return json.load(fh)
    from grading import variants
    submitted, kinds = os.path.join(folder, "submitted"), {}
    for assignment in course.assignments:
        options = variants(course, assignment)
        first_cell = assignment.parts[0].cells[0]
        chosen = {
            "correct": [nb for label, nb in options if label == "reference" or label.startswith("correct:")][:1 if smoke else 3],
            "mistaken": [] if smoke else [nb for label, nb in options if label.startswith("mistake:")][:4],
            "stub": [cohort.stub(course, assignment)],
            "hostile": [b"{ this is not a notebook", cohort.solved(course, assignment, {first_cell: "import sys\nsys.exit(3)"})],
        }
        kinds[assignment.id] = {}
        for kind, notebooks in chosen.items():
            for nb in notebooks:
                student = f"x{sum(map(len, kinds[assignment.id].values())):02d}"
                if isinstance(nb, bytes):
                    path = os.path.join(submitted, student, assignment.id, assignment.notebook)
                    os.makedirs(os.path.dirname(path))
                    with open(path, "wb") as fh:
                        fh.write(nb)
                else:
                    cohort.write(nb, submitted, student, assignment)
                kinds[assignment.id].setdefault(kind, []).append(student)
    started = time.monotonic()
    done = subprocess.run([os.path.join(BIN, "course"), "grade", submitted, "--out", os.path.join(folder, "out"),
                           "--jobs", "2"], cwd=ROOT, capture_output=True, text=True)   # its notes are not figures
    if done.returncode != 0:
        raise SystemExit(f"course grade of the sample failed:\n{done.stderr[-3000:]}")
    count = sum(len(s) for k in kinds.values() for s in k.values())
    print(f"sample: {count} hand-ins graded in {time.monotonic() - started:.0f} s", flush=True)
    with open(kinds_path, "w") as fh:
        json.dump(kinds, fh)
    return kinds


# --- a term of N students, made from the sample ---------------------------------------------------

def _course(folder, n, db_url):
    """The course of the term: course.yaml with due dates, a late policy and one extension, the
    rest of the course linked; roster.csv of its ``n`` students."""
    import yaml
    os.makedirs(folder)
    for name in ("solutions", "assignments", "data", "parts", "nbgrader_config.py"):
        os.symlink(os.path.join(ROOT, name), os.path.join(folder, name))
    with open(os.path.join(ROOT, "course.yaml")) as fh:
        raw = yaml.safe_load(fh)
    for entry in raw["assignments"].values():
        entry["due"] = DUE.isoformat() + "+00:00"
    raw["late"] = {"grace_minutes": 15, "penalty_per_day": 0.1, "max_penalty": 0.5}
    raw["extensions"] = {_sid(0): {a: (DUE + datetime.timedelta(days=3)).isoformat() + "+00:00"
                                   for a in raw["assignments"]}}
    if db_url:
        raw["db_url"] = db_url
    with open(os.path.join(folder, "course.yaml"), "w") as fh:
        yaml.safe_dump(raw, fh, sort_keys=False)
    with open(os.path.join(folder, "roster.csv"), "w") as fh:
        fh.write("id,first_name,last_name,email,section,sis_id\n")
        for i in range(n):
            fh.write(f"{_sid(i)},Student,Number {i},{_sid(i)}@example.edu,S{i % 4 + 1},{100000 + i}\n")
    return config.load(os.path.join(folder, "course.yaml"))


def _sid(i):
    return f"st{i:05d}"


def plan(kinds, n, seed=1):
    """[(student, assignment, sample student, submitted at, earlier sample or None)] for ``n`` students."""
    rng, found = random.Random(seed), []
    for i in range(n):
        for aid, by_kind in kinds.items():
            kind = rng.choices(list(SHARES), weights=list(SHARES.values()))[0]
            if kind == "missing" or not by_kind.get(kind):
                continue
            when = DUE + (datetime.timedelta(hours=rng.uniform(12, 120)) if rng.random() < LATE
                          else -datetime.timedelta(hours=rng.uniform(1, 96)))
            earlier = rng.choice(by_kind.get("mistaken") or by_kind["stub"]) if rng.random() < RESUBMITTED else None
            found.append((_sid(i), aid, rng.choice(by_kind[kind]), when, earlier))
    return found


def add_hand_ins(course, sample, out, submitted, hand_ins):
    """Each planned hand-in, as collect and ``course grade`` would have left it (gradebook rows aside)."""
    records = {}
    for student, aid, source, when, earlier in hand_ins:
        for folder, base in ((os.path.join(submitted, student, aid), os.path.join(sample, "submitted", source, aid)),
                             (os.path.join(out, "submitted", student, aid), os.path.join(sample, "out", "submitted", source, aid)),
                             (os.path.join(out, "autograded", student, aid), os.path.join(sample, "out", "autograded", source, aid))):
            if os.path.isdir(base):
                shutil.copytree(base, folder)
        submission_time.write(os.path.join(submitted, student, aid), when)
        sha256 = _own_copy(os.path.join(submitted, student, aid, course.assignment(aid).notebook), student)
        for which, at in ((earlier, when - datetime.timedelta(days=2)), (source, when)):
            if which is None:
                continue
            if (which, aid) not in records:
                records[which, aid] = store.read_result(os.path.join(sample, "out"), which, aid)
            record = dataclasses.replace(records[which, aid], student=student, graded_at=at.isoformat() + "+00:00",
                                         submitted_at=at.isoformat(), late=None, exported_at=None, by_hand=None)
            store.write_result(out, dataclasses.replace(record, sha256=sha256) if which == source else record)


def _own_copy(path, student):
    """Make the notebook at ``path`` the student's own bytes (its metadata names them), as no two
    students' files are alike: nothing keyed on a notebook's hash is shared. Returns its sha256."""
    with open(path, "rb") as fh:
        raw = fh.read()
    with contextlib.suppress(ValueError, AttributeError):
        nb = json.loads(raw)
        nb["metadata"]["handed_in_by"] = student
        raw = json.dumps(nb, indent=1).encode()
        with open(path, "wb") as fh:
            fh.write(raw)
    return hashlib.sha256(raw).hexdigest()


def clone_gradebook(course, db_url, sample_students, hand_ins, rng):
    """Each planned hand-in's rows of nbgrader's gradebook, copied from its sample's under the
    student's id (70% of written answers graded by hand), the sample's own students removed."""
    from nbgrader import api
    from sqlalchemy import delete, insert, select
    tables = {m: m.__table__ for m in (api.Student, api.SubmittedAssignment, api.SubmittedNotebook, api.Grade, api.Comment)}
    with api.Gradebook(db_url, course.course_id) as gb:
        conn = gb.db.connection()

        def rows(model):
            return [dict(r) for r in conn.execute(select(tables[model])).mappings()]
        names = {a.id: a.name for a in gb.assignments}
        answers = {name for assignment in course.assignments for name in assignment.written}
        written = {c.id for c in gb.db.query(api.GradeCell) if c.name in answers}
        max_score = {c.id: c.max_score for c in gb.db.query(api.GradeCell)}
        by_source = {(r["student_id"], names[r["assignment_id"]]): r for r in rows(api.SubmittedAssignment)}
        notebooks, grades, comments = {}, {}, {}
        for r in rows(api.SubmittedNotebook):
            notebooks.setdefault(r["assignment_id"], []).append(r)
        for target, model in ((grades, api.Grade), (comments, api.Comment)):
            for r in rows(model):
                target.setdefault(r["notebook_id"], []).append(r)
        new = {m: [] for m in tables}
        new[api.Student] = [{"id": s} for s in sorted({h[0] for h in hand_ins})]
        for student, aid, source, when, _ in hand_ins:
            sa = by_source.get((source, aid))
            if sa is None:        # the sample's hand-in nbgrader did not record
                continue
            sa_id = uuid.uuid4().hex
            new[api.SubmittedAssignment].append({**sa, "id": sa_id, "student_id": student, "timestamp": when})
            for nb in notebooks.get(sa["id"], []):
                nb_id = uuid.uuid4().hex
                new[api.SubmittedNotebook].append({**nb, "id": nb_id, "assignment_id": sa_id})
                for g in grades.get(nb["id"], []):
                    row = {**g, "id": uuid.uuid4().hex, "notebook_id": nb_id}
                    if g["cell_id"] in written and rng.random() < HAND_GRADED:
                        row.update(manual_score=rng.choice([0.0, 0.5, 1.0]) * max_score[g["cell_id"]], needs_manual_grade=False)
                    new[api.Grade].append(row)
                new[api.Comment] += [{**c, "id": uuid.uuid4().hex, "notebook_id": nb_id} for c in comments.get(nb["id"], [])]
        sample_ids = [sa["id"] for sa in by_source.values()]
        sample_nbs = [nb["id"] for sa_id in sample_ids for nb in notebooks.get(sa_id, [])]
        for model, column, ids in ((api.Grade, "notebook_id", sample_nbs), (api.Comment, "notebook_id", sample_nbs),
                                   (api.SubmittedNotebook, "id", sample_nbs), (api.SubmittedAssignment, "id", sample_ids),
                                   (api.Student, "id", sample_students)):
            conn.execute(delete(tables[model]).where(tables[model].c[column].in_(ids)))
        for model, table in tables.items():
            if new[model]:
                conn.execute(insert(table), new[model])
        gb.db.commit()


def build_term(course, sample, kinds, folder, n, db_url=None):
    """``folder``: the term's course, ``submitted/`` and grading folder ``out/``; its hand-ins."""
    from autograder.nbgrader import settings
    term = _course(os.path.join(folder, "course"), n, db_url)
    out, submitted = os.path.join(folder, "out"), os.path.join(folder, "submitted")
    settings.write_course_folder(term, out)           # a new grading folder, as `course grade --out` makes it
    hand_ins = plan(kinds, n)
    add_hand_ins(term, sample, out, submitted, hand_ins)
    # as `course grade` leaves it: the sha256 of each hand-in it looked at kept for `course status`
    status.hashes(out, [os.path.join(submitted, s, a, term.assignment(a).notebook) for s, a, *_ in hand_ins])
    store.batch_started(out, submitted, len(hand_ins), 0)     # the exports read the hand-ins from there
    store.batch_finished(out)
    if db_url:
        _copy_database(settings.settings(course, os.path.join(sample, "out")).CourseDirectory.db_url, db_url)
    else:
        shutil.copy(os.path.join(sample, "out", "gradebook.db"), os.path.join(out, "gradebook.db"))
    sample_students = sorted({s for by_kind in kinds.values() for students in by_kind.values() for s in students})
    clone_gradebook(term, settings.settings(term, out).CourseDirectory.db_url, sample_students,
                    hand_ins, random.Random(2))
    counts = {}
    for student, *_ in hand_ins:
        counts[student] = counts.get(student, 0) + 1
    with open(os.path.join(folder, "term.json"), "w") as fh:     # what the measuring processes read
        json.dump({"sample": sample, "kinds": kinds, "regrade": max(sorted(counts), key=counts.get)}, fh)
    return len(hand_ins)


def _copy_database(source_url, target_url):
    """Every row of the gradebook at ``source_url`` into the empty one at ``target_url``."""
    from nbgrader import api
    from sqlalchemy import create_engine, delete, insert, select
    api.Gradebook(target_url).close()           # nbgrader's schema and its version, and a row or two
    source, target = create_engine(source_url), create_engine(target_url)
    with source.connect() as src, target.begin() as dst:
        for table in reversed(api.Base.metadata.sorted_tables):
            dst.execute(delete(table))
        for table in api.Base.metadata.sorted_tables:
            found = [dict(r) for r in src.execute(select(table)).mappings()]
            if found:
                dst.execute(insert(table), found)


# --- the measurements, each in a process of its own --------------------------------------------

def measure_exports(folder):
    from autograder import pipeline
    course = config.load(os.path.join(folder, "course", "course.yaml"))
    out = os.path.join(folder, "out")
    timings = {}
    with pipeline.timed(timings, "reading the records"):
        records = store.load_results(out)
    warnings = pipeline.export(course, out, records, timings)
    return {"timings": timings, "warnings": warnings, "peak_mb": _peak_mb()}


def measure_similarity(folder):
    from grading import similarity_time
    course = config.load(os.path.join(folder, "course", "course.yaml"))
    seconds, _, pairs, groups = similarity_time(course, os.path.join(folder, "submitted"))
    return {"timings": {"similarity": seconds}, "peak_mb": _peak_mb(), "pairs": pairs}


def measure_gradebook(folder):
    """``NEW_HAND_INS`` new hand-ins (new students) into the gradebook, as ``course grade`` does
    (``timings["gradebook"]``), then as many others in one process (``timings["one process"]``, of
    which the course's own preprocessors ``timings["ours"]``: the rest is nbgrader's autograde, its
    floor); nbgrader already loaded, as it is once for a whole batch. Only the stage is timed, not
    the making of the hand-ins it reads."""
    from autograder.nbgrader import apps  # noqa: F401 - loaded once a command (about 1 s), not once a hand-in
    timings = {}
    warnings, hand_ins, timings["gradebook"] = _new_hand_ins_to_gradebook(folder, "new")
    with _timing_ours(timings):
        more, _, timings["one process"] = _new_hand_ins_to_gradebook(folder, "one", workers=1)
    return {"timings": timings, "warnings": warnings + more, "peak_mb": _peak_mb(), "hand_ins": hand_ins}


def _new_hand_ins_to_gradebook(folder, prefix, workers=None):
    """``NEW_HAND_INS`` hand-ins of new students named ``prefix``NNN through ``course grade``'s
    gradebook stage; (its warnings, the hand-ins, the stage's seconds)."""
    from autograder import pipeline
    from autograder.grade import discovery, grading
    course = config.load(os.path.join(folder, "course", "course.yaml"))
    out, submitted = os.path.join(folder, "out"), os.path.join(folder, "submitted")
    term = _term(folder)
    sample, kinds = term["sample"], term["kinds"]
    per = len(kinds)
    new = [(f"{prefix}{i:03d}", aid, by_kind["correct"][0], DUE, None)
           for i in range(NEW_HAND_INS // per) for aid, by_kind in kinds.items()]
    add_hand_ins(course, sample, out, submitted, new)
    for student, aid, *_ in new:      # staged again by the stage itself
        for sub in ("submitted", "autograded"):
            shutil.rmtree(os.path.join(out, sub, student, aid), ignore_errors=True)
    students = {s for s, *_ in new}
    tasks = [t for t in discovery.find_submissions(course, submitted) if t.student in students]
    records = [store.read_result(out, t.student, t.assignment) for t in tasks]
    batch = grading.Batch(records=records, graded=list(records))
    started = time.perf_counter()
    warnings = pipeline.to_gradebook(course, submitted, out, tasks, batch, workers=workers)
    return warnings, len(tasks), time.perf_counter() - started


@contextlib.contextmanager
def _timing_ours(timings):
    """Time the course's own preprocessors inside nbgrader's autograde (``timings["ours"]``): the
    rest of the gradebook stage is nbgrader's autograde itself, its floor."""
    from autograder.nbgrader import preprocessors
    timings["ours"] = 0.0
    classes = [getattr(preprocessors, name) for name in preprocessors.__all__]
    originals = {cls: cls.__dict__["preprocess"] for cls in classes if "preprocess" in cls.__dict__}

    def timed(original):
        def preprocess(self, nb, resources):
            started = time.perf_counter()
            try:
                return original(self, nb, resources)
            finally:
                timings["ours"] += time.perf_counter() - started
        return preprocess
    for cls, original in originals.items():
        cls.preprocess = timed(original)
    try:
        yield
    finally:
        for cls, original in originals.items():
            cls.preprocess = original


def measure_regrade(folder):
    from autograder import pipeline
    course = config.load(os.path.join(folder, "course", "course.yaml"))
    timings = {}
    batch = pipeline.grade(course, os.path.join(folder, "submitted"), os.path.join(folder, "out"), jobs=2,
                           force=True, students=[_term(folder)["regrade"]], timings=timings)
    return {"timings": timings, "warnings": batch.warnings, "peak_mb": _peak_mb(), "graded": len(batch.graded)}


def _term(folder):
    with open(os.path.join(folder, "term.json")) as fh:
        return json.load(fh)


def _settle(db_url):
    """What making the term wrote (a gigabyte at N = 2,000) put on disk before any stage is timed,
    so that none pays for the kernel writing it back, nor PostgreSQL for its checkpoint."""
    if db_url and db_url.startswith("postgresql"):
        from sqlalchemy import create_engine, text
        engine = create_engine(db_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as db:
            db.execute(text("CHECKPOINT"))
        engine.dispose()
    os.sync()


def _child(*argv):
    """Run this file's ``--measure`` in a fresh process; its result and its wall seconds."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", *argv], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"bench/term.py --measure {' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    found["wall"] = time.monotonic() - started
    return found


def _command(course_yaml, *argv):
    """Wall seconds of one ``course`` command, as an instructor runs it."""
    started = time.monotonic()
    subprocess.run([os.path.join(BIN, "course"), "--config", course_yaml, *argv], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.monotonic() - started


def measure_term(course, sample, kinds, work, n, db_url):
    """{stage: seconds} and {what: peak MB} of one term of ``n`` students."""
    folder = os.path.join(work, f"term-{n}" + ("-pg" if db_url else ""))
    shutil.rmtree(folder, ignore_errors=True)
    started = time.monotonic()
    hand_ins = build_term(course, sample, kinds, folder, n, db_url)
    _settle(db_url)
    print(f"  N={n}: {hand_ins} hand-ins made in {time.monotonic() - started:.0f} s; timing ...", flush=True)
    exports, similar = _child("exports", folder), _child("similarity", folder)
    course_yaml = os.path.join(folder, "course", "course.yaml")
    out = os.path.join(folder, "out")
    seconds = {step: exports["timings"].get(step, 0.0) for step in ("reading the records", *EXPORT_STEPS)}
    seconds["  of which similarity"] = similar["timings"]["similarity"]     # timed alone, in its own process
    seconds["course status"] = _command(course_yaml, "status", out, "--submitted", os.path.join(folder, "submitted"))
    seconds["course history <student>"] = _command(course_yaml, "history", _sid(1), "--dir", out)
    regrade = _child("regrade", folder)          # before the new students the gradebook batch adds
    seconds["one-student regrade"] = regrade["wall"]
    seconds["  of which grading its notebooks"] = regrade["timings"].get("grading", 0.0)
    gradebook = _child("gradebook", folder)
    seconds["gradebook, per new hand-in"] = gradebook["timings"]["gradebook"] / gradebook["hand_ins"]
    seconds["  the same in one process"] = gradebook["timings"]["one process"] / gradebook["hand_ins"]
    seconds["  of which nbgrader's autograde"] = (gradebook["timings"]["one process"]
                                                  - gradebook["timings"]["ours"]) / gradebook["hand_ins"]
    steps = sorted(regrade["timings"].items(), key=lambda kv: -kv[1])[:6]
    regrade_steps = f"the regrade's {regrade['wall']:.1f} s: " + ", ".join(f"{k} {v:.1f}" for k, v in steps)
    print(f"  N={n}: {regrade_steps}", flush=True)
    for warning in exports["warnings"] + gradebook["warnings"] + regrade["warnings"]:
        print(f"  warning: {warning}")
    peaks = {"exports": exports["peak_mb"], "similarity": similar["peak_mb"], "regrade": regrade["peak_mb"]}
    return hand_ins, seconds, peaks, regrade_steps


# --- the table ------------------------------------------------------------------------------------

def growth(sizes, values):
    """The exponents of ``values`` between consecutive ``sizes``."""
    return [math.log(max(b, 1e-6) / max(a, 1e-6)) / math.log(m / n)
            for (n, a), (m, b) in zip(zip(sizes, values), zip(sizes[1:], values[1:]))]


def nlogn(n, m):
    return 1 + math.log(math.log(m) / math.log(n)) / math.log(m / n)


def report(label, sizes, results, judged=True):
    """Print the table of one gradebook's terms and the targets; returns whether all are met."""
    hand_ins = [results[n][0] for n in sizes]
    stages = list(results[sizes[0]][1])
    print(f"\n{label}: seconds at each size (hand-ins: {', '.join(map(str, hand_ins))}), growth between sizes")
    print(f"  {'stage':<36}" + "".join(f"{'N=' + str(n):>10}" for n in sizes)
          + "".join(f"{'growth ' + str(i + 1):>10}" for i in range(len(sizes) - 1)) + f"{'s/hand-in':>11}")
    after = [s for s in stages if s not in ("course status", "course history <student>", "one-student regrade",
                                             "  of which grading its notebooks", "gradebook, per new hand-in",
                                             "  the same in one process", "  of which nbgrader's autograde",
                                             "  of which similarity")]
    slow = []
    for stage in stages:
        values = [results[n][1][stage] for n in sizes]
        exps = growth(hand_ins, values) if stage in after else []
        per = values[-1] / hand_ins[-1] if stage in after else None
        print(f"  {stage:<36}" + "".join(f"{v:>10.3f}" if v < 0.1 else f"{v:>10.2f}" for v in values)
              + "".join(f"{e:>10.2f}" for e in exps)
              + ("" if exps else " " * 10 * (len(sizes) - 1)) + (f"{per:>11.4f}" if per is not None else ""))
        if exps and values[-1] > 1.0 and exps[-1] > nlogn(hand_ins[-2], hand_ins[-1]) + 0.15:
            slow.append(f"{stage} {values[-2]:.2f} s -> {values[-1]:.2f} s (growth {exps[-1]:.2f}, N log N's "
                        f"{nlogn(hand_ins[-2], hand_ins[-1]):.2f}; one run: measure it again before reading much into it)")
    for what in ("exports", "similarity", "regrade"):
        print(f"  {'peak memory, ' + what + ' (MB)':<36}" + "".join(f"{results[n][2][what]:>10.0f}" for n in sizes))
    top = results[sizes[-1]][1]
    per_hand_in = (sum(top[s] for s in after) / hand_ins[-1]) + top["gradebook, per new hand-in"]
    print(f"\n  the figures to reach at N={sizes[-1]} ({label})"
          + ("" if judged else ": a smoke run, its values are not figures"))
    floor = top["  of which nbgrader's autograde"]
    from autograder.nbgrader.apps import WORKERS
    workers = min(WORKERS, os.cpu_count() or 1)         # the gradebook stage's processes
    memory = results[sizes[-1]][2]["similarity"]
    checks = [   # name, value (None: not measured), target, met, unit, why (when not met)
        ("every stage after grading, per hand-in", per_hand_in, f"<= {PER_HAND_IN} s", per_hand_in <= PER_HAND_IN,
         " s", f"the floor: nbgrader's autograde alone takes {floor:.3f} s a hand-in here in one process (every "
               f"hand-in reaches the gradebook through it; {floor / workers:.3f} s shared perfectly between "
               f"{workers} workers), the whole gradebook stage {top['  the same in one process']:.3f} s in one "
               f"process, {top['gradebook, per new hand-in']:.3f} s shared (the workers wait on the gradebook's "
               f"commits in turn); every other stage {per_hand_in - top['gradebook, per new hand-in']:.3f} s"),
        ("no stage grows faster than N log N", len(slow) if len(sizes) > 1 else None, "0 stages", not slow, " stages",
         f"growing faster than N log N: {', '.join(slow)}"),
        ("one-student regrade", top["one-student regrade"], "< 10 s", top["one-student regrade"] < 10, " s",
         results[sizes[-1]][3]),
        ("similarity, every assignment", top["  of which similarity"], "< 60 s", top["  of which similarity"] < 60, " s", ""),
        ("similarity's peak memory", memory, "< 2048 MB", memory < 2048, " MB", ""),
        ("course status", top["course status"], "< 2 s", top["course status"] < 2, " s", ""),
    ]
    for name, value, target, met, unit, why in checks:
        if value is None:
            print(f"    {name:<44} {'not measured (one size)':>18}  target {target:<10}")
            continue
        shown = f"{value:>10}" if isinstance(value, int) else f"{value:>10.3f}" if value < 1 else f"{value:>10.2f}"
        verdict = "(smoke run)" if not judged else "met" if met else "NOT MET"
        print(f"    {name:<44} {shown}{unit:<8} target {target:<10} {verdict}")
        if judged and not met:
            print(f"      why: {why or 'no cause measured in this run'}")
    hour = 3600 / per_hand_in if per_hand_in else float("inf")
    print(f"    after grading: {1000 * per_hand_in:.0f} s per thousand hand-ins ({hour:,.0f} hand-ins an hour)")
    return all(met or value is None for _, value, _, met, *_ in checks)


@contextlib.contextmanager
def _postgres():
    """A throwaway PostgreSQL server (tests/postgres_server.py): a function making a database on
    it, or None (and why) when there can be none here."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import postgres_server
    why = postgres_server.usable()
    if why:
        print(f"\nPostgreSQL: not measured: {why}")
        yield None
        return
    with postgres_server.server() as make_database:      # its own folder: its account cannot enter ours (0700)
        yield make_database


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="60,600,2000", help="students in each term (default 60,600,2000)")
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--keep", default=None, help="keep the working folders here (the graded sample is reused)")
    parser.add_argument("--smoke", action="store_true",
                        help="make test's run: a sample of one hand-in per kind, one term of 4 students, SQLite")
    parser.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        what, folder = args.measure
        measure = {"exports": measure_exports, "similarity": measure_similarity,
                   "gradebook": measure_gradebook, "regrade": measure_regrade}[what]
        print(json.dumps(measure(folder)))
        return 0
    sizes = [4] if args.smoke else [int(s) for s in args.sizes.split(",")]
    if args.smoke:
        args.db = "sqlite"
    else:
        os.environ.pop(reuse.STORE, None)     # figures: the sample and the regrades graded for real
    course = config.load()
    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="bench-term-")
    os.makedirs(work, exist_ok=True)
    sample = os.path.join(work, "sample")
    os.makedirs(sample, exist_ok=True)
    print(f"machine: {os.cpu_count()} cores; working folder {work}", flush=True)
    kinds = build_sample(course, sample, args.smoke)
    met = True
    for db in (("sqlite", "postgres") if args.db == "both" else (args.db,)):
        with (_postgres() if db == "postgres" else contextlib.nullcontext(None)) as make_database:
            if db == "postgres" and make_database is None:
                continue
            print(f"\nterms with the gradebook on {db}", flush=True)
            results = {n: measure_term(course, sample, kinds, work, n, make_database(f"term{n}") if make_database else None)
                       for n in sizes}
            met &= report(db, sizes, results, judged=not args.smoke)
    if not args.smoke:
        print("\nevery figure met" if met else "\nnot every figure met: each NOT MET above says why (the bench reports, "
              "it does not fail: its exit status is 0 whatever it finds)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

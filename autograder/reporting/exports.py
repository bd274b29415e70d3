"""What grading hands back: parts.csv (one row per part), totals for an LMS, Gradescope-style results,
a table and a summary for the terminal, feedback pages.

Everything a student sees is made from the result records (and, for the hand-graded
answers, nbgrader's gradebook); no hidden test source and no hidden expected value
can reach a student through it, because neither is in a record.
"""

import csv
import html
import json
import os
import re
import statistics

from selfcheck.wire import clean_text


COLUMNS = ("student", "assignment", "part", "score", "max_score", "status", "reason")
_FORMULA = ("=", "+", "-", "@", "\t", "\r", "\n")


def spreadsheet_safe(value):
    """A CSV field no spreadsheet runs as a formula: text starting with = + - @ (or a control
    character) gets a leading apostrophe, as OWASP recommends; numbers pass unchanged."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = clean_text("" if value is None else value)
    return "'" + text if text.startswith(_FORMULA) else text


def write_csv(path, columns, rows_):
    """Write rows (dicts) to ``path`` atomically, every field spreadsheet-safe."""
    tmp = path + ".tmp"
    with open(tmp, "w", newline="", encoding="utf-8", errors="replace") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for row in rows_:
            writer.writerow({k: spreadsheet_safe(v) for k, v in row.items()})
    os.replace(tmp, path)
    return path


def rows(records):
    for record in sorted(records, key=lambda r: r.key):
        for part in record.parts:
            yield {"student": record.student, "assignment": record.assignment,
                   "part": part.part, "max_score": part.max_score, "status": part.status,
                   "score": part.score if part.graded else "",
                   "reason": part.reason}


def write_grades(out, records):
    return write_csv(os.path.join(out, "parts.csv"), COLUMNS, rows(records))


def table(records):
    """Students down, parts across: score/max and a short status."""
    parts = []
    for record in records:
        for part in record.parts:
            if part.part not in parts:
                parts.append(part.part)
    cells = {}
    for record in records:
        for part in record.parts:
            mark = "" if part.status == "passed" else f" {part.status}"
            cells[record.student, part.part] = f"{part.score:g}/{part.max_score:g}{mark}"
    students = sorted({r.student for r in records})
    width = max(len("student"), *(len(s) for s in students))
    widths = [max(len(p), *(len(cells.get((s, p), "-")) for s in students)) for p in parts]
    lines = ["  ".join(["student".ljust(width)] + [p.ljust(w) for p, w in zip(parts, widths)])]
    lines.append("  ".join(["-" * width] + ["-" * w for w in widths]))
    for s in students:
        lines.append("  ".join([s.ljust(width)] + [cells.get((s, p), "-").ljust(w)
                                                   for p, w in zip(parts, widths)]))
    return "\n".join(line.rstrip() for line in lines)


# --- the end of a batch: what happened, and what a regrade changed ---------------------------

def _fraction_bucket(score, top):
    if top <= 0:
        return "full"
    if score >= top - 1e-9:
        return "full"
    if score <= 1e-9:
        return "zero"
    return "under half" if score < top / 2 else "half or more"


def summary(batch, course=None):
    """Graded, kept, failed to grade (with reasons), and the score distribution per part."""
    records = list(batch)
    graded, skipped = len(getattr(batch, "graded", records)), len(getattr(batch, "skipped", []))
    failed = [r for r in records if r.problem]
    ours = [r for r in failed if r.grader_error]
    lines = [f"graded now: {graded}   kept (unchanged since graded): {skipped}   "
             f"could not be graded: {len(failed)}"
             + (f" ({len(ours)} by a failure of the grader: nothing recorded for them; the next "
                "`course grade` grades them again)" if ours else "")]
    for name, why in getattr(batch, "refused", []):
        lines.append(f"  - folder {name!r} left out: {why}")
    for line in getattr(batch, "left_out", []):
        lines.append(f"  - left out of {line} (not a regular file of the release)")
    if getattr(batch, "interrupted", False):
        lines.append(f"INTERRUPTED: {len(batch.pending)} submission(s) not graded yet; "
                     "run the same command with --resume to finish")
    for r in sorted(failed, key=lambda r: r.key):
        lines.append(f"  - {r.student}/{r.assignment}: {r.problem}")
    odd = [(r, p) for r in records if not r.problem for p in r.parts
           if p.status in ("timeout", "error", "missing")]
    if odd:
        lines.append(f"parts that did not run normally ({len(odd)}; reasons in parts.csv):")
        for r, p in sorted(odd, key=lambda rp: (rp[0].student, rp[1].part))[:40]:
            reason = p.reason if len(p.reason) <= 110 else p.reason[:107] + "..."
            lines.append(f"  - {r.student}/{p.part}: {p.status}: {reason}")
        if len(odd) > 40:
            lines.append(f"  ... and {len(odd) - 40} more")
    by_part = {}
    for r in records:
        for p in r.parts:
            by_part.setdefault((r.assignment, p.part), []).append(p)
    if by_part:
        buckets = ("zero", "under half", "half or more", "full")
        lines.append("score distribution per part:")
        head = f"  {'assignment/part':<32} {'n':>4} {'mean':>6} {'median':>6} {'max':>5}  " + \
               "  ".join(f"{b:>12}" for b in buckets)
        lines.append(head)
        for (aid, pid), parts in by_part.items():
            scores = [p.score for p in parts]
            top = max(p.max_score for p in parts)
            counts = {b: 0 for b in buckets}
            for p in parts:
                counts[_fraction_bucket(p.score, p.max_score)] += 1
            lines.append(f"  {aid + '/' + pid:<32} {len(parts):>4} {statistics.mean(scores):>6.2f} "
                         f"{statistics.median(scores):>6.2f} {top:>5g}  "
                         + "  ".join(f"{counts[b]:>12}" for b in buckets))
    return "\n".join(lines)


def changes(previous, records):
    """(student, assignment, part, old score or None, new score) for every part of ``records``."""
    rows_ = []
    for r in sorted(records, key=lambda r: r.key):
        old = previous.get(r.key)
        old_parts = {p.part: p.score for p in old.parts} if old else {}
        for p in r.parts:
            rows_.append((r.student, r.assignment, p.part, old_parts.get(p.part), p.score))
    return rows_


def diff_table(rows_, everything=False):
    """Old and new scores per student and part; only the changed ones unless ``everything``."""
    shown = [row for row in rows_ if everything or row[3] is None or abs(row[3] - row[4]) > 1e-9]
    if not shown:
        return f"no score changed ({len(rows_)} part scores compared)"
    width = max(len("student"), *(len(r[0]) for r in shown))
    lines = [f"{'student':<{width}}  {'assignment/part':<32} {'old':>7} {'new':>7}  change",
             f"{'-' * width}  {'-' * 32} {'-' * 7} {'-' * 7}  ------"]
    for student, aid, pid, old, new in shown:
        change = "new" if old is None else ("same" if abs(old - new) <= 1e-9 else f"{new - old:+g}")
        lines.append(f"{student:<{width}}  {aid + '/' + pid:<32} "
                     f"{'-' if old is None else f'{old:g}':>7} {new:>7g}  {change}")
    changed = sum(1 for r in rows_ if r[3] is not None and abs(r[3] - r[4]) > 1e-9)
    lines.append(f"{changed} of {len(rows_)} part scores changed")
    return "\n".join(lines)


# --- exports -----------------------------------------------------------------------------------

def totals(course, records, gradebook=None):
    """One row per student: id, total, the most possible, and each assignment's score.

    Every export takes a submission's autograded score from its result record, the one
    source of those; the gradebook adds only what people decided in formgrader: the answers
    graded by hand, a part's score overridden by hand, and any late penalty. (nbgrader's own export, grades.csv, reads
    the gradebook, which :mod:`autograder.pipeline` filled from the same records.)
    Only assignments somebody has handed in count: the others are left empty and stay out
    of ``max_total`` until they are released and handed in.
    """
    gradebook = gradebook or {}
    by_key = {r.key: r for r in records}
    handed_in = {r.assignment for r in records}
    out = []
    for student in sorted({r.student for r in records}):
        row = {"student_id": student}
        for a in course.assignments:
            record = by_key.get((student, a.id))
            if a.id not in handed_in or (record is not None and record.grader_error):
                row[a.id] = ""          # nobody has handed it in yet, or the grader failed: grade again
            elif record is None:
                row[a.id] = 0.0
            else:
                nbgrader = gradebook.get(record.key, {})
                by_hand = sum(w["score"] for w in nbgrader.get("written", {}).values())
                auto = sum(_scored(p, nbgrader.get("overrides")) for p in record.parts)
                row[a.id] = round(auto + by_hand - nbgrader.get("penalty", 0.0), 3)
        row["total"] = round(sum(row[a.id] for a in course.assignments if row[a.id] != ""), 3)
        row["max_total"] = sum(max_points(a) for a in course.assignments if a.id in handed_in)
        out.append(row)
    return out


def _scored(part, overrides=None):
    """A part's score: the grader's, unless an instructor overrode it in formgrader."""
    return (overrides or {}).get(part.part, part.score)


def max_points(assignment):
    return sum(p.points for p in assignment.parts) + sum(assignment.written.values())


def totals_columns(course):
    return ["student_id", "total", "max_total"] + [a.id for a in course.assignments]


def write_totals(out, course, records, gradebook=None):
    return write_csv(os.path.join(out, "totals.csv"), totals_columns(course),
                     ({k: (f"{v:g}" if isinstance(v, float) else v) for k, v in row.items()}
                      for row in totals(course, records, gradebook)))


def part_output(part):
    """A part's reason, then one line per check (and its message when it failed)."""
    lines = [part.reason]
    for check in part.checks:
        mark = "ok  " if check.status == "passed" else "FAIL"
        lines.append(f"{mark} [{check.visibility}] {check.doc}")
        if check.status != "passed":
            lines.append(f"     {check.message}")
    return "\n".join(lines)


def _test(name, number, score, top, output, tags, graded=True):
    """One Gradescope test. Its ``status`` knows only passed and failed: full marks pass, a 0
    fails, and partial credit (or anything not graded yet) has no status, so Gradescope shows
    the score itself and the output says which it is."""
    test = {"name": name, "number": number, "score": score, "max_score": top, "output": output,
            "visibility": "visible", "tags": tags}
    if graded and score >= top:
        test["status"] = "passed"
    elif graded and score <= 0:
        test["status"] = "failed"
    elif graded:
        test["output"] = f"partial credit: {score:g} of {top:g}\n{output}"
    return test


def gradescope(record, course=None, written=None, overrides=None):
    """A Gradescope autograder ``results.json`` for one submission.

    One test per graded part (its score, partial credit included) and one per
    hand-graded answer (from the gradebook; 0 until graded); ``score`` is their sum.
    """
    titles = {}
    if course is not None:
        for part in course.assignment(record.assignment).parts:
            titles[part.id] = part.title
    tests = []
    for part in record.parts:
        output = part_output(part)
        if part.part in (overrides or {}):
            output = f"score set by hand in formgrader (the grader gave {part.score:g})\n{output}"
        tests.append(_test(f"{part.part}: {titles.get(part.part, part.part)}", part.part,
                           _scored(part, overrides), part.max_score, output,
                           [record.assignment, part.status], graded=part.graded))
    for cell, grade in (written or {}).items():
        tests.append(_test(f"{cell} (graded by hand)", cell, grade["score"], grade["max_score"],
                           ("graded by hand in formgrader" + (f": {grade['comment']}" if grade.get("comment") else ""))
                           if grade["graded"] else "not graded yet",
                           [record.assignment, "written"], graded=grade["graded"]))
    output = (f"Could not be graded: {record.problem}" if record.problem
              else f"{record.assignment}: graded by the course's hidden and public suites")
    return {"score": round(sum(t["score"] for t in tests), 3), "output": output,
            "visibility": "visible", "stdout_visibility": "hidden",
            "execution_time": round(record.seconds if record.seconds is not None
                                    else sum(p.seconds for p in record.parts), 2),
            "tests": tests,
            "extra_data": {"student": record.student, "assignment": record.assignment,
                           "sha256": record.sha256, "grader": record.grader,
                           "suites": record.suites}}


def write_gradescope(out, course, records, gradebook=None):
    folder = os.path.join(out, "gradescope")
    for record in records:
        nbgrader = (gradebook or {}).get((record.student, record.assignment), {})
        path = os.path.join(folder, record.student, record.assignment, "results.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            json.dump(gradescope(record, course, nbgrader.get("written"), nbgrader.get("overrides")),
                      fh, indent=1)
    return folder


# --- feedback pages --------------------------------------------------------------------------

_STYLE = """
:root{--ink:#1d232a;--muted:#57606a;--line:#d8dde3;--ok:#1a7f37;--mid:#9a6700;--bad:#cf222e;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);
 background:#fff;max-width:54rem;margin:0 auto;padding:1.5rem 1.2rem 3rem}
header{border-bottom:1px solid var(--line);padding-bottom:1rem;margin-bottom:1.2rem}
h1{font-size:1.45rem;margin:0 0 .2rem}.who{color:var(--muted);margin:0}
.total{display:flex;align-items:center;gap:1rem;margin-top:.8rem}
.big{font-size:2rem;font-weight:700;white-space:nowrap}.big small{font-size:1rem;color:var(--muted);font-weight:500}
.bar{flex:1;height:.7rem;background:#eaeef2;border-radius:99px;overflow:hidden}
.bar i{display:block;height:100%;border-radius:99px}
.note{color:var(--muted);font-size:.9rem;margin:.5rem 0 0}
section{border:1px solid var(--line);border-radius:10px;margin:1rem 0;overflow:hidden}
section>h2{display:flex;align-items:baseline;gap:.6rem;font-size:1.08rem;margin:0;padding:.7rem 1rem;
 background:var(--bg);border-bottom:1px solid var(--line)}
h2 .title{flex:1}h2 .pts{font-weight:700;white-space:nowrap}
.badge{font-size:.75rem;font-weight:600;border-radius:99px;padding:.05rem .55rem;color:#fff;white-space:nowrap}
.b-passed{background:var(--ok)}.b-partial{background:var(--mid)}
.b-failed,.b-error,.b-timeout,.b-missing{background:var(--bad)}
.body{padding:.6rem 1rem .8rem}.reason{margin:.1rem 0 .6rem;color:var(--muted)}
.check{border-left:4px solid var(--bad);background:#fff8f8;border-radius:6px;padding:.55rem .8rem;margin:.6rem 0}
.check h3{font-size:.98rem;margin:0 0 .35rem}
dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem .8rem;margin:0;font-size:.92rem}
dt{color:var(--muted);font-weight:600;white-space:nowrap}.what{font-weight:600;color:var(--ink)}dd{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}
.mistake{color:#7d2d00}
code{font:.86rem/1.4 ui-monospace,"DejaVu Sans Mono",monospace;background:#eef1f4;padding:.05rem .3rem;border-radius:4px}
.tag{font-size:.72rem;border:1px solid #b8c0c8;border-radius:4px;padding:0 .3rem;color:var(--muted);
 font-weight:500;margin-left:.3rem;vertical-align:middle;white-space:nowrap}
details{margin-top:.5rem}summary{cursor:pointer;color:var(--muted)}
ul.ok{list-style:none;padding-left:.2rem;margin:.4rem 0}ul.ok li{margin:.2rem 0}
ul.ok li:before{content:"\\2713";color:var(--ok);font-weight:700;margin-right:.5rem}
.problem{border:1px solid var(--bad);background:#fff8f8;border-radius:8px;padding:.6rem 1rem}
table{border-collapse:collapse;width:100%;font-size:.92rem}td,th{text-align:left;padding:.3rem .4rem;border-bottom:1px solid var(--line)}
.overview{margin-top:.9rem}.overview th{color:var(--muted);font-weight:600}.num{text-align:right;font-weight:600;white-space:nowrap}
a{color:#0969da;text-decoration:none}
footer{color:var(--muted);font-size:.8rem;margin-top:2rem}
"""

_LIKELY = re.compile(r"\s*Likely mistake:\s*")


def _colour(score, top):
    if top and score >= top - 1e-9:
        return "var(--ok)"
    return "var(--mid)" if score > 1e-9 else "var(--bad)"


def _split_message(message):
    """(what came back, likely mistake or '') from a check's message."""
    pieces = _LIKELY.split(message or "", maxsplit=1)
    came_back = pieces[0].strip()
    mistake = pieces[1].strip().rstrip(".") + "." if len(pieces) > 1 else ""
    return came_back, mistake


def _reproduce(part, check, failing_public):
    test_file = f"test_{part.part}.py"
    if check.visibility == "public":
        return (f"<code>pytest '{html.escape(test_file)}::{html.escape(check.name)}'</code> "
                "in your assignment folder")
    if failing_public:
        first = failing_public[0]
        return (f"no public test runs this exact check; the public test that fails alongside it: "
                f"<code>pytest '{html.escape(test_file)}::{html.escape(first.name)}'</code>")
    return (f"no public test fails for this hidden check: call your function as described "
            f"above (what was checked, what came back) in your notebook, fix it, then run "
            f"<code>pytest {html.escape(test_file)}</code>")


def feedback_page(record, course=None, written=None, overrides=None):
    """One self-contained HTML page (no network, no scripts, no external assets) for one submission.

    ``written`` (grade id -> {"score", "max_score", "graded"}) adds the hand-graded answers;
    ``overrides`` (part -> score) the parts' scores an instructor set in formgrader.
    """
    overrides = overrides or {}

    def points(part):
        shown = f"{_scored(part, overrides):g} / {part.max_score:g}"
        return shown + (" (set by hand)" if part.part in overrides else "")

    esc = html.escape
    titles = {}
    if course is not None:
        with_parts = course.assignment(record.assignment)
        titles = {p.id: p.title for p in with_parts.parts}
    total, possible = sum(_scored(p, overrides) for p in record.parts), record.max_score
    pct = 100 * total / possible if possible else 0
    out = ["<!doctype html><html lang=en><head><meta charset=utf-8>",
           "<meta name=viewport content='width=device-width,initial-scale=1'>",
           f"<title>{esc(record.assignment)}: feedback for {esc(record.student)}</title>",
           f"<style>{_STYLE}</style></head><body>",
           f"<header><h1>{esc(record.assignment)}: feedback</h1>",
           f"<p class=who>for <b>{esc(record.student)}</b> &middot; {esc(record.notebook)}"
           + (f" &middot; graded {esc(record.graded_at)}" if record.graded_at else "") + "</p>",
           f"<div class=total><span class=big id=total>{total:g} <small>/ {possible:g} autograded</small></span>"
           f"<span class=bar><i style='width:{pct:.1f}%;background:{_colour(total, possible)}'></i></span></div>"]
    if written:
        done = [w for w in written.values() if w["graded"]]
        out.append(f"<p class=note>Autograded parts above; written answers, graded by hand: "
                   f"{sum(w['score'] for w in done):g} / {sum(w['max_score'] for w in written.values()):g}"
                   + ("" if len(done) == len(written) else " (some not graded yet)") + "</p>")
    else:
        out.append("<p class=note>Autograded parts above; written answers are graded by hand "
                   "and are not included here.</p>")
    if len(record.parts) > 1:
        out.append("<table class=overview><tr><th>part</th><th></th><th>score</th></tr>")
        for part in record.parts:
            out.append(f"<tr><td><a href='#part-{esc(part.part)}'>{esc(part.part)}</a> "
                       f"<span class=tag>{esc(titles.get(part.part, ''))}</span></td>"
                       f"<td><span class='badge b-{esc(part.status)}'>{esc(part.status)}</span></td>"
                       f"<td class=num>{points(part)}</td></tr>")
        out.append("</table>")
    out.append("</header>")
    if record.problem:
        out.append(f"<p class=problem><b>Problem with the submission:</b> {esc(record.problem)}</p>")
    for part in record.parts:
        status = part.status
        title = titles.get(part.part, "")
        out.append(f"<section id='part-{esc(part.part)}'><h2><span class=title>{esc(part.part)}"
                   + (f" <span class=tag>{esc(title)}</span>" if title and title != part.part else "")
                   + f"</span><span class='badge b-{esc(status)}'>{esc(status)}</span>"
                   f"<span class=pts>{points(part)}</span></h2><div class=body>")
        checks = part.checks
        failing = [c for c in checks if c.status != "passed"]
        passed = [c for c in checks if c.status == "passed"]
        if not checks or failing:      # the reason comes first: a cell that did not load, or the likely mistake
            out.append(f"<p class=reason>{esc(part.reason)}"
                       + (" (partial credit counts each check's weight)" if failing else "") + "</p>")
        failing_public = [c for c in failing if c.visibility == "public"]
        for check in failing:
            came_back, mistake = _split_message(check.message)
            if came_back.startswith(check.doc + ":"):
                came_back = came_back[len(check.doc) + 1:].strip()
            out.append(f"<div class=check><dl>"
                       f"<dt>What was checked</dt><dd class=what>&#10007; {esc(check.doc)}"
                       f"<span class=tag>{esc(check.visibility)} check</span></dd>"
                       f"<dt>What came back</dt><dd>{esc(came_back)}</dd>"
                       + (f"<dt>Likely mistake</dt><dd class=mistake>{esc(mistake)}</dd>" if mistake else "")
                       + f"<dt>Reproduce it</dt><dd>{_reproduce(part, check, failing_public)}</dd>"
                       "</dl></div>")
        if passed:
            out.append(f"<details{'' if failing else ' open'}><summary>{len(passed)} of {len(checks)} "
                       "checks passed</summary><ul class=ok>")
            for check in passed:
                out.append(f"<li>{esc(check.doc)}<span class=tag>{esc(check.visibility)}</span></li>")
            out.append("</ul></details>")
        out.append("</div></section>")
    out.append("<footer>Made from your graded results. Public checks run in your folder with "
               "<code>pytest</code>; hidden checks use inputs you have not seen.</footer></body></html>")
    return "\n".join(out)


def write_feedback(out, records, course=None, gradebook=None):
    folder = os.path.join(out, "reports")
    for record in records:
        nbgrader = (gradebook or {}).get((record.student, record.assignment), {})
        path = os.path.join(folder, record.student, f"{record.assignment}.html")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", errors="replace") as fh:
            fh.write(feedback_page(record, course, nbgrader.get("written"), nbgrader.get("overrides")))
    return folder

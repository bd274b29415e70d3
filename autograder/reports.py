"""What grading hands back: grades.csv, a table for the terminal, feedback pages.

Everything here is made from the result records alone; no hidden test source
and no hidden expected value can reach a student through it, because neither
is in a record.
"""

import csv
import html
import os

COLUMNS = ("student", "assignment", "part", "score", "max_score", "status", "reason")


def rows(records):
    for record in sorted(records, key=lambda r: (r["student"], r["assignment"])):
        for part in record["parts"]:
            yield {"student": record["student"], "assignment": record["assignment"],
                   "part": part["part"], "score": part["score"], "max_score": part["max_score"],
                   "status": part["status"], "reason": part["reason"]}


def write_grades(out, records):
    path = os.path.join(out, "grades.csv")
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows(records))
    return path


def table(records):
    """Students down, parts across: score/max and a short status."""
    parts = []
    for record in records:
        for part in record["parts"]:
            if part["part"] not in parts:
                parts.append(part["part"])
    cells = {}
    for record in records:
        for part in record["parts"]:
            mark = "" if part["status"] == "passed" else f" {part['status']}"
            cells[record["student"], part["part"]] = f"{part['score']:g}/{part['max_score']:g}{mark}"
    students = sorted({r["student"] for r in records})
    width = max(len("student"), *(len(s) for s in students))
    widths = [max(len(p), *(len(cells.get((s, p), "-")) for s in students)) for p in parts]
    lines = ["  ".join(["student".ljust(width)] + [p.ljust(w) for p, w in zip(parts, widths)])]
    lines.append("  ".join(["-" * width] + ["-" * w for w in widths]))
    for s in students:
        lines.append("  ".join([s.ljust(width)] + [cells.get((s, p), "-").ljust(w)
                                                   for p, w in zip(parts, widths)]))
    return "\n".join(line.rstrip() for line in lines)


_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1d232a}
h1{font-size:1.4rem;margin-bottom:.2rem}.total{font-size:1.1rem;color:#444}
section{border:1px solid #d8dde3;border-radius:8px;padding:.8rem 1rem;margin:1rem 0}
h2{font-size:1.1rem;margin:.1rem 0 .4rem}.score{float:right;font-weight:600}
.passed{color:#1a7f37}.partial{color:#9a6700}.failed,.error,.timeout,.missing{color:#cf222e}
ul{padding-left:1.1rem;margin:.3rem 0}li{margin:.35rem 0}
.msg{display:block;color:#444;font-size:.92rem;margin-top:.15rem;white-space:pre-wrap}
.tag{font-size:.75rem;border:1px solid #bbb;border-radius:4px;padding:0 .3rem;color:#555}
code{background:#f3f4f6;padding:0 .2rem;border-radius:3px}
"""


def feedback_page(record, course=None):
    """One self-contained HTML page (no network, no scripts) for one submission."""
    esc = html.escape
    total = sum(p["score"] for p in record["parts"])
    possible = sum(p["max_score"] for p in record["parts"])
    out = [f"<!doctype html><html lang=en><head><meta charset=utf-8>",
           f"<title>{esc(record['assignment'])}: feedback for {esc(record['student'])}</title>",
           f"<style>{_STYLE}</style></head><body>",
           f"<h1>{esc(record['assignment'])} — feedback for {esc(record['student'])}</h1>",
           f"<p class=total>Autograded parts: <b id=total>{total:g} / {possible:g}</b>. "
           "Written answers are graded by hand and are not included here.</p>"]
    if record.get("problem"):
        out.append(f"<p class=error><b>Problem with the submission:</b> {esc(record['problem'])}</p>")
    for part in record["parts"]:
        out.append(f"<section id='part-{esc(part['part'])}'><h2>{esc(part['part'])}"
                   f"<span class='score {esc(part['status'])}'>{part['score']:g} / {part['max_score']:g}"
                   f" ({esc(part['status'])})</span></h2><p>{esc(part['reason'])}</p><ul>")
        for check in part["checks"]:
            ok = check["status"] == "passed"
            mark = "&#10003;" if ok else "&#10007;"
            line = (f"<li><span class={'passed' if ok else 'failed'}>{mark}</span> {esc(check['doc'])} "
                    f"<span class=tag>{esc(check['visibility'])}</span>")
            if not ok:
                line += f"<span class=msg>{esc(check['message'])}</span>"
                if check["visibility"] == "public":
                    line += (f"<span class=msg>Reproduce it: <code>pytest test_{esc(part['part'])}.py "
                             f"-k {esc(check['name'])}</code> in your assignment folder.</span>")
            out.append(line + "</li>")
        out.append("</ul></section>")
    out.append("</body></html>")
    return "\n".join(out)


def write_feedback(out, records):
    folder = os.path.join(out, "reports")
    for record in records:
        path = os.path.join(folder, record["student"], f"{record['assignment']}.html")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(feedback_page(record))
    return folder

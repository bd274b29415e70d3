"""The instructor's morning-after page: what the cohort got wrong, who could not be graded, what looks copied.

``course report [DIR]`` (and every ``course grade``/``course export``) writes
``cohort_report.html``, one self-contained page (no scripts, pictures as data
URIs), and ``cohort_report.csv`` beside it with every number the page shows, one
row each. Everything is made from the result records: mistakes are counted by
the catalogue's name each check recorded (autograder/mistake_ids.py), never by
reading messages; similarity reads the submitted notebooks themselves, the code of
each that grading runs (autograder/similarity.py).
"""

import base64
import datetime
import html
import io
import os
import statistics
from dataclasses import dataclass, field

from autograder import cohort, grading, similarity
from autograder.mistake_ids import part_mistake
from autograder.reporting.exports import _STYLE, _split_message, write_csv
from autograder.results import GRADER_ERROR
from selfcheck.program import NotebookError, parse_notebook, read_notebook
from selfcheck.wire import clean_text

HTML = "cohort_report.html"
CSV = "cohort_report.csv"
COLUMNS = ("section", "assignment", "part", "item", "students", "share", "value", "detail")
NOT_GRADED = ("error", "timeout", "missing", GRADER_ERROR)
BINS = 8                # histogram bars per part: eighths of its points
TOP_CHECKS = 15
CONTEXT = 2             # lines shown around the matching lines of two similar hand-ins

_EXTRA = """
body{max-width:72rem}.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(22rem,1fr));gap:1rem}
img{max-width:100%;height:auto}figure{margin:0}figcaption{color:var(--muted);font-size:.85rem}
.warn{border:1px solid var(--mid);background:#fff8e6;border-radius:8px;padding:.6rem 1rem}
.side{display:grid;grid-template-columns:1fr 1fr;gap:.6rem}
pre{font:.8rem/1.35 ui-monospace,"DejaVu Sans Mono",monospace;background:#f6f8fa;border-radius:6px;
 padding:.5rem;overflow-x:auto;margin:.3rem 0}pre mark{background:#ffe08a}
nav a{margin-right:1rem}td code{white-space:nowrap}
"""


@dataclass
class Report:
    """Every number of the page, as the CSV's rows (dicts of COLUMNS), plus what only the page draws."""
    rows: list = field(default_factory=list)
    pictures: dict = field(default_factory=dict)      # assignment -> (PNG bytes) of its histograms
    groups: dict = field(default_factory=dict)        # assignment -> [similarity.Group]
    cohort: dict = field(default_factory=dict)        # assignment -> number of submissions

    def section(self, name):
        return [r for r in self.rows if r["section"] == name]


def _row(section, assignment, part, item, students="", share="", value="", detail=""):
    return {"section": section, "assignment": assignment, "part": part, "item": item,
            "students": students, "share": share, "value": value, "detail": detail}


def _share(n, total):
    return round(n / total, 3) if total else 0.0


def _labels(top):
    """The histogram's bars, as score ranges; the last one holds full marks."""
    width = top / BINS if top else 1
    return [f"{i * width:g}-{(i + 1) * width:g}" for i in range(BINS)]


def _counts(values, top):
    """How many of ``values`` fall in each bar."""
    counts = [0] * BINS
    for v in values:
        counts[min(BINS - 1, int(v / top * BINS)) if top else 0] += 1
    return counts


def _figure(width):
    from matplotlib.figure import Figure      # no pyplot: nothing here ever opens a window
    return Figure(figsize=(width, 2.6), dpi=80)


def _png(fig):
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _style(ax, xlabel, ylabel):
    from matplotlib.ticker import MaxNLocator
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))      # students come whole
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=9)
    ax.tick_params(labelsize=8)
    ax.spines[["top", "right"]].set_visible(False)


def _histograms(parts, scores):
    """One PNG: a histogram of the scores of each part, side by side."""
    fig = _figure(3.2 * max(1, len(parts)))
    for n, pid in enumerate(parts, 1):
        top, values = scores[pid]
        counts = _counts(values, top)
        width = top / BINS if top else 1
        ax = fig.add_subplot(1, len(parts), n)
        ax.bar([i * width for i in range(BINS)], counts, width=width * 0.92, align="edge", color="#4c72b0")
        ax.set_xlim(0, top or 1)
        ax.set_title(f"{pid} (of {top:g})", fontsize=10)
        _style(ax, "score", "students")
    return _png(fig)


def _times_picture(seconds):
    fig = _figure(6)
    ax = fig.add_subplot(1, 1, 1)
    ax.hist(seconds, bins=min(20, max(1, len(seconds))), color="#4c72b0")
    _style(ax, "seconds per submission", "submissions")
    return _png(fig)


def reader(spec, release):
    """A function (key, notebook) -> the similarity.Document of what grading runs of that
    notebook of assignment ``spec`` (``release`` its released notebook)."""
    given = similarity.given_lines(release)
    cells = [cell for part in spec.parts for cell in part.cells]
    return lambda key, nb: similarity.document(key, similarity.graded_code(nb, release, cells), given)


def submitted_documents(spec, students, submitted, release):
    """similarity.Documents of each student's hand-in of assignment ``spec`` under ``submitted``,
    read as grading reads it; a hand-in grading could not read is left out (the not-graded table
    says why), one the comparison cannot read says so."""
    read = reader(spec, release)
    docs = []
    for student in students:
        key = (student, spec.id)
        path = os.path.join(submitted, student, spec.id, spec.notebook)
        try:
            nb = parse_notebook(grading.read_submission(path))
        except (NotebookError, OSError):
            continue
        if grading.which_notebook(nb, release):
            continue        # graded as not this assignment's notebook: none of it runs
        try:
            docs.append(read(key, nb))
        except Exception as exc:  # noqa: BLE001 - one hand-in the comparison cannot read never stops the report
            docs.append(similarity.Document(key, unread=f"the comparison could not read it ({type(exc).__name__})"))
    return docs


def known_documents(course, spec, release):
    """similarity.Documents of the known ways to write assignment ``spec``: the reference
    solution and every entry of the catalogue in tests/mutants/, correct variants and realistic
    mistakes alike (their fingerprints are common, never evidence)."""
    ways = [cohort.solved(course, spec)]
    for part in spec.parts:
        mistakes, correct = cohort.catalogue(course, part.id)
        ways += [cohort.solved(course, spec, entry["cells"]) for entry in mistakes.values()]
        ways += [cohort.solved(course, spec, variant) for variant in correct.values()]
    read = reader(spec, release)
    return [read(("known", spec.id), nb) for nb in ways]


def similar_groups(course, spec, students, submitted):
    """(groups of similar hand-ins, every Document compared or not) of assignment ``spec``."""
    release = read_notebook(course.release(spec, spec.notebook))
    docs = submitted_documents(spec, students, submitted, release)
    pairs = similarity.compare(docs, course.similarity_threshold, known_documents(course, spec, release))
    return similarity.groups(pairs), docs


def _pair_row(assignment, pair):
    return _row("similarity", assignment, "", f"{pair.a.key[0]} & {pair.b.key[0]}", value=pair.score,
                detail=f"{len(pair.shared)} shared fingerprints")


def _group_row(assignment, group):
    return _row("similarity group", assignment, "", " & ".join(key[0] for key in group.members),
                len(group.members), value=group.score, detail=f"{len(group.pairs)} flagged pairs")


def analyse(course, records, submitted=None):
    """The Report of a cohort's records (of the course's assignments); ``submitted`` (their
    notebooks) adds similarity flags."""
    report = Report()
    for spec in course.assignments:
        assignment = spec.id
        mine = sorted((r for r in records if r.assignment == assignment), key=lambda r: r.student)
        if not mine:
            continue
        n = report.cohort[assignment] = len(mine)
        scores, mistakes, failed = {}, {}, {}
        for record in mine:
            for part in record.parts:
                pid = part.part
                if part.status in NOT_GRADED:
                    report.rows.append(_row("not graded", assignment, pid, record.student,
                                            value=part.status, detail=clean_text(part.reason, 400)))
                if part.status != GRADER_ERROR:
                    scores.setdefault(pid, (part.max_score, []))[1].append(part.score)
                checks = part.checks
                mistake = part_mistake(checks)
                if mistake:
                    said = next(c for c in checks if c.mistake == mistake and not c.passed)
                    entry = mistakes.setdefault((pid, mistake), [0, _split_message(said.message)[1]])
                    entry[0] += 1
                for check in checks:
                    if not check.passed:
                        entry = failed.setdefault((pid, check.name), [0, check.doc, check.visibility])
                        entry[0] += 1
        for pid, (top, values) in scores.items():
            for label, count in zip(_labels(top), _counts(values, top)):
                report.rows.append(_row("score", assignment, pid, label, count, _share(count, len(values)),
                                        detail=f"mean {statistics.mean(values):.2f} of {top:g}"))
        if scores:
            report.pictures[assignment] = _histograms([p.id for p in spec.parts if p.id in scores], scores)
        for (pid, mistake), (count, said) in sorted(mistakes.items(), key=lambda kv: (-kv[1][0], kv[0])):
            report.rows.append(_row("mistake", assignment, pid, mistake, count, _share(count, n), detail=said))
        ranked = sorted(failed.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_CHECKS]
        for (pid, name), (count, doc, visibility) in ranked:
            report.rows.append(_row("check", assignment, pid, name, count, _share(count, n),
                                    value=visibility, detail=doc))
        for record in mine:
            if record.seconds is not None:
                report.rows.append(_row("time", assignment, "", record.student, value=record.seconds))
        if submitted:
            groups, docs = similar_groups(course, spec, [r.student for r in mine], submitted)
            report.groups[assignment] = groups
            for doc in docs:
                if doc.unread:
                    report.rows.append(_row("not compared", assignment, "", doc.key[0], detail=doc.unread))
            for group in groups:
                report.rows.append(_group_row(assignment, group))
                report.rows += [_pair_row(assignment, pair) for pair in group.pairs]
    return report


def _img(png, alt):
    return (f"<img alt='{html.escape(alt)}' src='data:image/png;base64,"
            f"{base64.b64encode(png).decode()}'>")


def _key(row):
    """The row's name on the page (``data-row``), which its CSV row also gives."""
    return html.escape("/".join(str(row[k]) for k in ("section", "assignment", "part", "item")), quote=True)


def _tr(row, *cells):
    return f"<tr data-row=\"{_key(row)}\">" + "".join(cells) + "</tr>"


def _excerpt(doc, cell, marked):
    """A cell of ``doc`` as compared: its ``marked`` lines marked, with CONTEXT lines around them."""
    esc = html.escape
    near = {n + d for c, n in marked if c == cell for d in range(-CONTEXT, CONTEXT + 1)}
    body, gap = [], False
    for n in sorted(n for c, n in doc.lines if c == cell):
        if n not in near:
            gap = True
            continue
        if gap and body:
            body.append("\u22ef")
        gap = False
        line = esc(clean_text(doc.lines[cell, n], 300))
        body.append(f"<mark>{line}</mark>" if (cell, n) in marked else line)
    if gap:
        body.append("\u22ef")
    return "\n".join(body)


def _side_by_side(pair):
    """The two hand-ins' cells that hold a shared passage, matching lines marked."""
    esc = html.escape
    columns = []
    for doc, marked in zip((pair.a, pair.b), pair.matching_lines()):
        text = [f"<b>{esc(doc.key[0])}</b> &middot; cell <code>{esc(cell)}</code><pre>{_excerpt(doc, cell, marked)}</pre>"
                for cell in sorted({cell for cell, _ in marked})]
        columns.append("<div>" + "".join(text) + "</div>")
    return "<div class=side>" + "".join(columns) + "</div>"


def page(course, report):
    """The HTML page of a Report: self-contained, no scripts."""
    esc = html.escape
    total = sum(report.cohort.values())
    out = ["<!doctype html><html lang=en><head><meta charset=utf-8>",
           "<meta name=viewport content='width=device-width,initial-scale=1'>",
           f"<title>Cohort report: {esc(course.course_id)}</title>",
           f"<style>{_STYLE}{_EXTRA}</style></head><body>",
           f"<header><h1>Cohort report: {esc(course.course_id)}</h1>",
           f"<p class=who>{total} submissions ("
           + ", ".join(f"{esc(a)} {n}" for a, n in report.cohort.items())
           + f") &middot; made {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"
           f" &middot; every number is also in <code>{CSV}</code></p>",
           "<nav><a href='#scores'>scores</a><a href='#mistakes'>mistakes</a><a href='#checks'>hardest checks</a>"
           "<a href='#not-graded'>not graded</a><a href='#time'>time</a><a href='#similarity'>similarity</a>"
           "</nav></header>"]

    out.append("<section id=scores><h2><span class=title>Scores per part</span></h2><div class=body><div class=grid>")
    for assignment, png in report.pictures.items():
        rows = [r for r in report.section("score") if r["assignment"] == assignment]
        table = "".join(_tr(r, f"<td>{esc(r['part'])}</td><td>{esc(r['item'])}</td>",
                            f"<td class=num>{r['students']}</td>") for r in rows)
        out.append(f"<figure>{_img(png, f'score histograms of {assignment}')}<figcaption><b>{esc(assignment)}</b>, "
                   f"{report.cohort[assignment]} submissions; bars are eighths of each part's points</figcaption>"
                   f"<details><summary>the counts</summary><table><tr><th>part</th><th>score</th><th>students</th>"
                   f"</tr>{table}</table></details></figure>")
    out.append("</div></div></section>")

    out.append("<section id=mistakes><h2><span class=title>Diagnosed mistakes, most common first</span></h2>"
               "<div class=body><p class=reason>Each student counts once per part, for the catalogued mistake "
               "(<code>tests/mutants/&lt;part&gt;.py</code>) their failing checks name most; the share is of the "
               "assignment's submissions.</p>")
    mistakes = report.section("mistake")
    if mistakes:
        out.append("<table><tr><th>mistake</th><th>part</th><th class=num>students</th><th class=num>share</th>"
                   "<th>what the students were told</th></tr>")
        for r in sorted(mistakes, key=lambda r: (-r["students"], r["assignment"], r["part"], r["item"])):
            out.append(_tr(r, f"<td><code>{esc(r['item'])}</code></td><td>{esc(r['part'])}</td>",
                           f"<td class=num>{r['students']}</td><td class=num>{100 * r['share']:.0f}%</td>",
                           f"<td class=mistake>{esc(r['detail'])}</td>"))
        out.append("</table>")
    else:
        out.append("<p>No catalogued mistake was diagnosed.</p>")
    out.append("</div></section>")

    out.append(f"<section id=checks><h2><span class=title>Checks failed most often (top {TOP_CHECKS} per "
               "assignment)</span></h2><div class=body><table><tr><th>check</th><th>part</th><th></th>"
               "<th class=num>students</th><th class=num>share</th></tr>")
    for r in report.section("check"):
        out.append(_tr(r, f"<td>{esc(r['detail'])}<br><code>{esc(r['item'])}</code></td><td>{esc(r['part'])}</td>",
                       f"<td><span class=tag>{esc(r['value'])}</span></td>",
                       f"<td class=num>{r['students']}</td><td class=num>{100 * r['share']:.0f}%</td>"))
    out.append("</table></div></section>")

    out.append("<section id=not-graded><h2><span class=title>Parts not graded normally: error, timeout, "
               "missing</span></h2><div class=body>")
    odd = report.section("not graded")
    if odd:
        out.append("<table><tr><th>student</th><th>assignment</th><th>part</th><th>status</th><th>reason</th></tr>")
        for r in odd:
            out.append(_tr(r, f"<td>{esc(r['item'])}</td><td>{esc(r['assignment'])}</td><td>{esc(r['part'])}</td>",
                           f"<td><span class='badge b-{esc(r['value'])}'>{esc(r['value'])}</span></td>",
                           f"<td>{esc(r['detail'])}</td>"))
        out.append("</table>")
    else:
        out.append("<p>Every part of every submission was graded.</p>")
    out.append("</div></section>")

    times = report.section("time")
    out.append("<section id=time><h2><span class=title>Time per submission</span></h2><div class=body>")
    if times:
        seconds = [r["value"] for r in times]
        out.append(f"<p>median {statistics.median(seconds):.1f} s, mean {statistics.mean(seconds):.1f} s, "
                   f"slowest {max(seconds):.1f} s, over {len(seconds)} submissions graded.</p>")
        out.append(_img(_times_picture(seconds), "histogram of the seconds each submission took"))
        out.append("<table><tr><th>slowest</th><th>assignment</th><th class=num>seconds</th></tr>")
        for r in sorted(times, key=lambda r: -r["value"])[:5]:
            out.append(_tr(r, f"<td>{esc(r['item'])}</td><td>{esc(r['assignment'])}</td>",
                           f"<td class=num>{r['value']:.1f}</td>"))
        out.append("</table>")
    out.append("</div></section>")

    out.append("<section id=similarity><h2><span class=title>Similar submissions</span></h2><div class=body>"
               "<p class=warn><b>A flag is not a finding and never changes a grade.</b> It says hand-ins share "
               "more unusual code than independent work usually does, once names, layout, comments and the order "
               "of functions are set aside. Read them side by side and decide.</p>"
               "<p class=reason>Compared: the code grading runs of each hand-in (its solution cells and the "
               "definitions of cells the student added, shown as Python reads it: comments and layout gone), "
               "without the released notebook's own lines. Common code is no evidence: what the reference "
               "solution or an entry of the catalogue (<code>tests/mutants/</code>: correct variants and "
               "realistic mistakes) holds, and what "
               f"{similarity.COMMON_SHARE:.0%} of an assignment's hand-ins (and at least "
               f"{similarity.COMMON_AT_LEAST}) hold. Score: the share of the smaller hand-in's other fingerprints "
               "(winnowed 5-token passages, as MOSS computes them) that the other one holds too; flagged from "
               f"<code>similarity_threshold: {course.similarity_threshold}</code> in course.yaml. A group is "
               "every hand-in joined to another by a flag.</p>")
    unread = report.section("not compared")
    if unread:
        out.append("<table><tr><th>not compared</th><th>assignment</th><th>why: look at it</th></tr>")
        out += [_tr(r, f"<td>{esc(r['item'])}</td><td>{esc(r['assignment'])}</td><td>{esc(r['detail'])}</td>")
                for r in unread]
        out.append("</table>")
    found = [(assignment, group) for assignment, groups in report.groups.items() for group in groups]
    if not found:
        out.append("<p>No pair of submissions reached the threshold.</p>")
    else:
        out.append("<table><tr><th>group</th><th>assignment</th><th class=num>hand-ins</th>"
                   "<th class=num>highest score</th><th>flagged pairs</th></tr>")
        for assignment, group in found:
            r = _group_row(assignment, group)
            out.append(_tr(r, f"<td>{esc(r['item'])}</td><td>{esc(assignment)}</td>",
                           f"<td class=num>{r['students']}</td><td class=num>{r['value']}</td>",
                           f"<td>{esc(r['detail'])}</td>"))
        out.append("</table>")
    shown = 0
    for assignment, group in found:
        out.append(f"<h3>{esc(_group_row(assignment, group)['item'])} &middot; {esc(assignment)}</h3>")
        for pair in group.pairs:
            r = _pair_row(assignment, pair)
            shown += 1
            out.append(f"<details{' open' if shown == 1 else ''}><summary><b>{esc(pair.a.key[0])}</b> and "
                       f"<b>{esc(pair.b.key[0])}</b> &middot; score <span data-row=\"{_key(r)}\">{r['value']}</span> "
                       f"({len(pair.shared)} shared fingerprints)</summary>{_side_by_side(pair)}</details>")
    out.append("</div></section>")
    out.append("<footer>Made by <code>course report</code> from the graded results; the matching lines are the "
               "students' own code as Python reads it, shown as text.</footer></body></html>")
    return "\n".join(out)


def write(course, out, records, submitted=None):
    """Write cohort_report.html and cohort_report.csv into ``out``; returns the page's path.

    The submissions are read from ``submitted``, else from where the last batch read them."""
    submitted = submitted or grading.read_journal(out).get("submitted") or os.path.join(out, "submitted")
    report = analyse(course, records, submitted if os.path.isdir(submitted) else None)
    write_csv(os.path.join(out, CSV), COLUMNS, report.rows)
    path = os.path.join(out, HTML)
    with open(path + ".tmp", "w", encoding="utf-8", errors="replace") as fh:
        fh.write(page(course, report))
    os.replace(path + ".tmp", path)
    return path

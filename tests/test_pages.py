"""The pages show a student's text as text: whatever a name, a message or a line of handed-in
code holds, it is in the page's text, never in its markup (autoescaped templates), and the page
needs nothing outside itself. Records and hand-ins are made here, never graded."""

import dataclasses
from html.parser import HTMLParser

import pytest

from autograder.mistakes import cohort
from autograder.records.results import Check, Lateness, PartResult, Submission
from autograder.report import cohort_analysis, cohort_page, feedback

ODD = "</dd></pre><script>alert('x')</script><img src=x onerror=alert(1)> & \"quoted\" 'single' =1+2"


class Page(HTMLParser):
    """A page's elements, attributes and text, as a browser's parser reads them."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.text = [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs

    def handle_data(self, data):
        self.text.append(data)


def _shown_as_text(html, *expected):
    page = Page(html)
    assert "script" not in page.tags and not any(name.startswith("on") for name, _ in page.attributes)
    assert not any(value and ("http" in value or "javascript:" in value) for _, value in page.attributes)
    text = "".join(page.text)
    for value in expected:
        assert value in text, value
    return page


def _record(student, checks):
    return Submission(student, "attention", "attention.ipynb",
                      [PartResult("softmax", 1.5, 4, "partial", f"reason {ODD}", checks),
                       PartResult("causal_mask", 0, 4, "error", f"NotImplementedError {ODD}")],
                      problem=f"problem {ODD}", graded_at=ODD, seconds=2.0)


CHECKS = [Check("test_public[<x>]", f"public {ODD}", "public", 1, "failed",
                f"came back {ODD}.", f"mistake-{ODD}", ODD),
          Check("test_hidden'", f"hidden {ODD}", "hidden", 1, "failed", ODD),
          Check("test_ok", f"passed {ODD}", "public", 1, "passed")]


def test_the_feedback_page_shows_every_value_as_text(course):
    record = _record(f"student {ODD}", CHECKS)
    html = feedback.feedback_page(record, course, {"q1": {"score": 1.0, "max_score": 2.0, "graded": True}},
                                  {"softmax": 2.0})
    page = _shown_as_text(html, f"student {ODD}", f"reason {ODD}", f"problem {ODD}", f"public {ODD}",
                          f"came back {ODD}", f"{ODD}.", "pytest 'test_softmax.py::test_public[<x>]'")
    assert page.tags.count("dd") == 7 and page.tags.count("section") == 2


@pytest.fixture(scope="module")
def hand_ins(course, tmp_path_factory):
    """Two near-copies of a solution whose code holds markup in a string, handed in."""
    from test_similarity import DISTINCTIVE, _near_copy
    odd = {name: code.replace("return", f"note = {ODD!r}\n    return", 1) for name, code in DISTINCTIVE.items()}
    submitted = tmp_path_factory.mktemp("pages") / "submitted"
    assignment = course.assignment("attention")
    students = {f"original {ODD}": odd, "copier": _near_copy(odd)}
    for student, cells in students.items():
        cohort.write(cohort.solved(course, assignment, cells), str(submitted), student, assignment)
    return str(submitted), sorted(students)


@pytest.mark.slow      # compares hand-ins with the catalogue's: seconds
def test_the_cohort_report_shows_every_value_as_text_and_the_copied_code_side_by_side(course, hand_ins):
    submitted, students = hand_ins
    records = [_record(student, CHECKS) for student in students]
    report = cohort_analysis.analyse(course, records, submitted)
    assert report.groups["attention"], "the near-copies are flagged"
    page = _shown_as_text(cohort_page.page(course, report), f"original {ODD}", f"NotImplementedError {ODD}",
                          f"public {ODD}", f"note = {ODD!r}")
    assert "pre" in page.tags and "mark" in page.tags
    assert page.tags.count("svg") == 3, "a histogram of each part's scores and one of the times, drawn in the page"
    assert all(value.startswith("#") for name, value in page.attributes if name in ("src", "href")), \
        "nothing outside the page"


def test_the_feedback_page_shows_each_written_answer_and_an_override_badged_by_its_score(course):
    record = _record("ann", CHECKS)
    written = {"answer_selection": {"score": 1.0, "max_score": 1.0, "graded": True, "comment": f"clear {ODD}"},
               "answer_mask_order": {"score": 0.0, "max_score": 1.0, "graded": False, "comment": ""}}
    html = feedback.feedback_page(record, course, written, {"softmax": 4.0})
    page = _shown_as_text(html, "answer_selection", "1 / 1", f"clear {ODD}", "answer_mask_order", "not graded yet")
    assert "0 / 1" not in "".join(page.text)
    softmax = html.split('id="part-softmax"')[1].split("</h2>")[0]
    assert "b-passed" in softmax and "partial" not in softmax and "4 / 4 (set by hand)" in softmax
    nothing = feedback.feedback_page(record, course, {c: dict(w, graded=False) for c, w in written.items()})
    assert "graded by hand: not graded yet" in nothing and "0 / 2" not in nothing
    assert "(some not graded yet)" in html
    kept = {"answer_selection": written["answer_selection"],       # given to an earlier answer, to confirm
            "answer_mask_order": dict(written["answer_mask_order"], score=0.5, stale=True)}
    kept_page = feedback.feedback_page(record, course, kept)
    assert "1.5 / 2 (some given to an earlier answer, to be confirmed)" in kept_page
    assert "some not graded yet" not in kept_page
    late = Lateness(due="2026-12-08T23:59:00+00:00", due_from="due", minutes_late=130.0, submitted="x",
                    rule="10% per started day late, at most 50%", fraction=0.1, points=0.15)
    page = feedback.feedback_page(dataclasses.replace(record, late=late), course)
    assert "2.2 hours after the due date" in page and "late penalty 0.15 points (10% of the points earned)" in page


def test_the_cohort_histograms_count_a_score_set_by_hand(course):
    record = _record("ann", [])
    report = cohort_analysis.analyse(course, [record], gradebook={record.key: {"overrides": {"softmax": 4.0}}})
    assert report.scores["attention"]["softmax"] == (4, [4.0])
    assert cohort_analysis.analyse(course, [record]).scores["attention"]["softmax"] == (4, [1.5])


def test_a_histogram_is_laid_out_to_scale_with_whole_counts():
    from autograder.report import histograms
    h = histograms.scores("softmax", 4, [1, 0, 0, 0, 0, 0, 3, 6])
    assert [b.says for b in h.bars][::7] == ["0-0.5: 1", "3.5-4: 6"] and len(h.bars) == 8
    counts = [1, 0, 0, 0, 0, 0, 3, 6]
    assert [b.height / h.bars[-1].height for b in h.bars] == pytest.approx([c / 6 for c in counts], abs=0.01)
    assert all(h.left <= b.x and b.x + b.width <= h.right and b.y >= h.top for b in h.bars)
    assert [label for _, label in h.yticks] == ["0", "2", "4", "6"]
    assert [label for _, label in h.xticks] == ["0", "1", "2", "3", "4"]
    assert [x for x, _ in h.xticks] == [h.left, *[x for x, _ in h.xticks][1:-1], h.right]
    same = histograms.seconds([2.0, 2.0])
    assert sum(b.height > 0 for b in same.bars) == 1 and [label for _, label in same.yticks][-1] == "2"


def test_an_export_draws_again_only_the_pages_whose_record_or_hand_grades_changed(course, tmp_path):
    """An export after one student's regrade draws that student's page alone; a TA's new hand
    grade redraws the page it is on; a change to course.yaml's reading redraws every one."""
    records = [_record(student, CHECKS) for student in ("ann", "ben", "cat")]
    gradebook = {r.key: {"written": {"answer_selection": {"score": 0.0, "max_score": 1.0, "graded": False}}}
                 for r in records}
    asked = []

    def drawn(records, gradebook, course=course):
        before = {p: p.stat().st_mtime_ns for p in (tmp_path / "reports").glob("*/*.html")}
        asked.clear()
        feedback.write_feedback(str(tmp_path), records, course, gradebook, asked.extend)
        return sorted(p.parent.name for p in (tmp_path / "reports").glob("*/*.html")
                      if before.get(p) != p.stat().st_mtime_ns)
    assert drawn(records, gradebook) == ["ann", "ben", "cat"] and len(asked) == 3
    assert drawn(records, gradebook) == [] and asked == []
    records[1] = dataclasses.replace(records[1], graded_at="later")
    gradebook[records[2].key]["written"]["answer_selection"].update(score=1.0, graded=True)
    assert drawn(records, gradebook) == ["ben", "cat"] and asked == [records[1].key, records[2].key]
    assert "1 / 1" in (tmp_path / "reports" / "cat" / "attention.html").read_text()
    assert drawn(records, gradebook, None) == ["ann", "ben", "cat"]

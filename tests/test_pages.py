"""The pages show a student's text as text: whatever a name, a message or a line of handed-in
code holds, it is in the page's text, never in its markup (autoescaped templates), and the page
needs nothing outside itself. Records and hand-ins are made here, never graded."""

from html.parser import HTMLParser

import pytest

from autograder import cohort
from autograder.reporting import cohort_analysis, cohort_page, feedback
from autograder.results import Check, PartResult, Submission

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


@pytest.mark.slow      # compares hand-ins with the catalogue's and draws the pictures: seconds
def test_the_cohort_report_shows_every_value_as_text_and_the_copied_code_side_by_side(course, hand_ins):
    submitted, students = hand_ins
    records = [_record(student, CHECKS) for student in students]
    report = cohort_analysis.analyse(course, records, submitted)
    assert report.groups["attention"], "the near-copies are flagged"
    page = _shown_as_text(cohort_page.page(course, report), f"original {ODD}", f"NotImplementedError {ODD}",
                          f"public {ODD}", f"note = {ODD!r}")
    assert "pre" in page.tags and "mark" in page.tags
    assert all(value.startswith("data:image/png;base64,") for name, value in page.attributes if name == "src")

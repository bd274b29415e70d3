"""Students' markdown made safe to render, when a submission is autograded and before feedback.

nbgrader's formgrade and feedback templates render markdown without nbconvert's
``sanitize_html``, so a ``<script>`` in a written answer would run in the grader's browser,
logged in to a Jupyter server. Autograde's sanitising pass (what formgrader shows) and
generate_feedback both run this (:mod:`autograder.nbgrader.settings`).
"""

import re

import bleach
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

_TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5",
         "h6", "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody",
         "td", "th", "thead", "tr", "ul"}
_ATTRIBUTES = {"a": ["href", "title"], "img": ["src", "alt", "title"], "td": ["align"], "th": ["align"]}
_PROTOCOLS = ["http", "https", "mailto", "attachment"]


class SanitizeMarkdown(NbGraderPreprocessor):
    """Every markdown cell rendered to HTML and reduced to the tags and links a written answer
    needs: scripts, event handlers, styles and javascript: links go; text, formatting,
    tables, images and math stay."""

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int) -> tuple[NotebookNode, dict]:
        if cell.cell_type == "markdown":
            html = bleach.clean(markdown2html_mistune(cell.source), tags=_TAGS, attributes=_ATTRIBUTES,
                                protocols=_PROTOCOLS, strip=True)
            # nbgrader renders the cell as markdown once more: one HTML block without blank lines
            # is passed through untouched, so no markdown link can appear in it now
            cell.source = "<div>\n" + re.sub(r"\n\s*\n", "\n", html.strip()) + "\n</div>"
        return cell, resources

"""Students' markdown made safe to render, when a submission is autograded and before feedback.

nbgrader's formgrade and feedback templates render markdown without nbconvert's
``sanitize_html``, so a ``<script>`` in a written answer would run in the grader's browser,
logged in to a Jupyter server. Autograde's sanitising pass (what formgrader shows) and
generate_feedback both run this (:mod:`autograder.nbgrader.settings`).
"""

import functools
import re
from html import escape

import bleach
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

_TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5",
         "h6", "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody",
         "td", "th", "thead", "tr", "ul"}
_ATTRIBUTES = {"a": ["href", "title"], "img": ["src", "alt", "title"], "td": ["align"], "th": ["align"]}
_PROTOCOLS = ["http", "https", "mailto", "attachment"]


MAX_RENDERED_CELL = 20_000      # characters: a written answer is a few paragraphs
MAX_RENDERED = 100_000          # characters of markdown rendered per notebook, the release's included
SHOWN = 20_000                  # characters of a cell shown as text when it is not rendered


class SanitizeMarkdown(NbGraderPreprocessor):
    """Every markdown cell rendered to HTML and reduced to the tags and links a written answer
    needs: scripts, event handlers, styles and javascript: links go; text, formatting,
    tables, images and math stay. Rendering costs the grader tens of microseconds a character,
    outside any sandbox: a cell over ``MAX_RENDERED_CELL`` characters, or past the notebook's
    ``MAX_RENDERED``, is shown as escaped text instead (its start, and how long it is)."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        self._left = MAX_RENDERED
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int) -> tuple[NotebookNode, dict]:
        if cell.cell_type == "markdown":
            text, left = cell.source, getattr(self, "_left", MAX_RENDERED)
            if len(text) > min(MAX_RENDERED_CELL, left):
                html = (f"<pre>{escape(text[:SHOWN])}</pre>\n<p>(a cell of {len(text):,} characters, shown as "
                        "text: too long to render)</p>")
            else:
                self._left = left - len(text)
                html = _rendered(text)
            # nbgrader renders the cell as markdown once more: one HTML block without blank lines
            # is passed through untouched, so no markdown link can appear in it now
            cell.source = "<div>\n" + re.sub(r"\n\s*\n", "\n", html.strip()) + "\n</div>"
        return cell, resources


@functools.lru_cache(maxsize=512)
def _rendered(text: str) -> str:
    """A markdown cell's text rendered and cleaned, kept by its text: most of a hand-in's markdown
    is the release's, the same in every hand-in (the last 512 cells rendered, each at most
    ``MAX_RENDERED_CELL`` characters)."""
    return bleach.clean(markdown2html_mistune(text), tags=_TAGS, attributes=_ATTRIBUTES, protocols=_PROTOCOLS,
                        strip=True)

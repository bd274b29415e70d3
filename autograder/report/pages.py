"""The one way an HTML page is made: a Jinja2 template of ``templates/``, every value escaped.

Autoescaping makes a student's text text wherever it lands (a name, a message, a line of
code): no page builds markup from a value, so none needs an escape of its own. Every page
extends ``base.html``, which inlines the one stylesheet, ``page.css``: a page is a single
self-contained file, with no script, no network and no other file to go with it.
"""

from __future__ import annotations

from typing import Any

import jinja2

_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("autograder.report", "templates"), autoescape=True,
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_ENVIRONMENT.filters["g"] = lambda number: f"{number:g}"      # 2.5, 3, 0.125: as the exports write them


def render(template: str, **context: Any) -> str:
    """The page ``template`` (a file of ``templates/``) with ``context``."""
    return _ENVIRONMENT.get_template(template).render(**context)

"""The course's documentation: Sphinx, MyST Markdown and the PyData theme, as JupyterHub's and
nbgrader's are. `make docs` builds it into docs/_build/html with warnings as errors."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))

project = "Self-Attention and the Transformer: autograded exercises"
html_title = "Self-Attention course"
author = "the course's instructors"
extensions = ["myst_parser", "course_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# reference/generated/ is written at each build from the code and included by the reference pages;
# mistakes.json is the data docs/mistakes.md is rendered from
exclude_patterns = ["_build", "reference/generated", "_ext", "_static"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3           # [text](page.md#a-heading) links to a heading, checked at build
nitpicky = True
suppress_warnings: list[str] = []
html_theme = "pydata_sphinx_theme"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 5,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_static_path = ["_static"]
html_css_files = ["wide.css"]
html_show_sourcelink = False

"""Students' markdown made safe to render, when a submission is autograded and before feedback.

nbgrader's formgrade and feedback templates render markdown without nbconvert's
``sanitize_html``, so a ``<script>`` in a written answer would run in the grader's browser,
logged in to a Jupyter server. Autograde's sanitising pass (what formgrader shows) and
generate_feedback both run this (:mod:`autograder.nbgrader.settings`).

An image pasted into an answer (JupyterLab, Notebook 7 and VS Code keep it in the cell's
``attachments``, referenced as ``attachment:<name>``) is written into the page itself, so
formgrader and the feedback page show it with nothing to fetch: only PNG, JPEG, GIF and WebP
images whose bytes are what their type says (:func:`_image`). Anything else attached (an SVG,
which can carry a script; a file that is not an image; one that is too large) is left out and a
note in its place says so. A TA's comment on the feedback page is shown as its text, escaped,
with markdown's formatting and none of its HTML.
"""

import base64
import binascii
import functools
import re
import urllib.parse
from html import escape, unescape

import bleach
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
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
MAX_IMAGE = 4 << 20             # bytes of one image: a full-screen screenshot
MAX_IMAGES = 16 << 20           # bytes of images shown per notebook

# the images a browser shows without running anything, and how their files begin
_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",),
          "image/gif": (b"GIF87a", b"GIF89a"), "image/webp": (b"RIFF",)}
_INLINE = re.compile(r"data:(image/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/]+=*)")
_IMG = re.compile(r'<img((?:\s+[a-z]+="[^"]*")*)\s*/?>')
_ATTR = re.compile(r'([a-z]+)="([^"]*)"')
_PREFIX = "attachment:"


class SanitizeMarkdown(NbGraderPreprocessor):
    """Every markdown cell rendered to HTML and reduced to the tags and links a written answer
    needs: scripts, event handlers, styles and javascript: links go; text, formatting,
    tables, images and math stay. Rendering costs the grader tens of microseconds a character,
    outside any sandbox: a cell over ``MAX_RENDERED_CELL`` characters, or past the notebook's
    ``MAX_RENDERED``, is shown as escaped text instead (its start, and how long it is). Images
    (the cell's attachments, or ones already written into it) do not count as its text; they
    are shown up to ``MAX_IMAGES`` bytes a notebook."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        self._left, self._images_left = MAX_RENDERED, MAX_IMAGES
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int) -> tuple[NotebookNode, dict]:
        if cell.cell_type == "markdown":
            attachments = cell.get("attachments")
            images = dict(attachments) if isinstance(attachments, dict) else {}
            text = _INLINE.sub(functools.partial(_take_inline, images), cell.source)
            left = getattr(self, "_left", MAX_RENDERED)
            if len(text) > min(MAX_RENDERED_CELL, left):
                html = (f"<pre>{escape(cell.source[:SHOWN])}</pre>\n<p>(a cell of {len(cell.source):,} characters, "
                        "shown as text: too long to render)</p>")
            else:
                self._left = left - len(text)
                html = _IMG.sub(functools.partial(self._image_tag, images), _rendered(text))
            # nbgrader renders the cell as markdown once more: one HTML block without blank lines
            # is passed through untouched, so no markdown link can appear in it now
            cell.source = "<div>\n" + re.sub(r"\n\s*\n", "\n", html.strip()) + "\n</div>"
            cell.pop("attachments", None)       # the images shown are in the source now
        nbgrader = cell.metadata.get("nbgrader")
        if isinstance(nbgrader, dict) and isinstance(nbgrader.get("comment"), str):
            nbgrader["comment"] = _comment(nbgrader["comment"])
        return cell, resources

    def _image_tag(self, images: dict, found: re.Match) -> str:
        """An ``<img>`` of the cleaned HTML, with an ``attachment:`` source written in as the
        image itself, or a note saying why it is not shown."""
        attrs = dict(_ATTR.findall(found.group(1)))
        src = unescape(attrs.get("src", ""))
        if not src.startswith(_PREFIX):
            return found.group(0)
        name = src[len(_PREFIX):]
        if name not in images:
            name = urllib.parse.unquote(name)
        image, why = _image(images.get(name))
        if image is not None and len(image[1]) > getattr(self, "_images_left", MAX_IMAGES):
            image, why = None, "the notebook's images are too large to show them all"
        if image is None:
            return f"<em>(image {escape(name)} not shown: {why})</em>"
        self._images_left = getattr(self, "_images_left", MAX_IMAGES) - len(image[1])
        mime, data = image
        shown = "".join(f' {key}="{attrs[key]}"' for key in ("alt", "title") if key in attrs)
        return f'<img src="data:{mime};base64,{base64.b64encode(data).decode()}"{shown}>'


def inline_images_only(html: str) -> str:
    """``html`` (this pass's) with every image that would be fetched (an ``http:`` or ``https:``
    source) replaced by a note: a page that must load nothing shows only the images it holds."""
    def keep(found: re.Match) -> str:
        src = unescape(dict(_ATTR.findall(found.group(1))).get("src", ""))
        return found.group(0) if src.startswith("data:") else f"<em>(image {escape(src[:200])} not shown here)</em>"
    return _IMG.sub(keep, html)


def _take_inline(images: dict, found: re.Match) -> str:
    """An image written into the text as a ``data:`` URL (by the student, or by this pass at
    autograde) set aside as an attachment of its own, so that it is checked like one and not
    counted as text."""
    name = f"inline-image-{len(images)}"
    while name in images:
        name += "-"
    images[name] = {found.group(1): found.group(2)}
    return _PREFIX + name


def _image(attachment: object) -> tuple[tuple[str, bytes] | None, str]:
    """``((mime type, bytes), "")`` for an attachment a browser can show safely, else
    ``(None, why not)``."""
    if not isinstance(attachment, dict) or not attachment:
        return None, "the notebook has no such attachment"
    for mime, magic in _MAGIC.items():
        data = attachment.get(mime)
        if not isinstance(data, str):
            continue
        if len(data) > MAX_IMAGE * 4 // 3 + 4:
            return None, f"larger than {MAX_IMAGE >> 20} MB"
        try:
            raw = base64.b64decode(re.sub(r"\s", "", data), validate=True)
        except (binascii.Error, ValueError):
            return None, "not valid base64"
        if not raw.startswith(magic) or (mime == "image/webp" and raw[8:12] != b"WEBP"):
            return None, f"not a {mime.partition('/')[2].upper()} image"
        return (mime, raw), ""
    kinds = ", ".join(sorted(str(k) for k in attachment))[:100]
    if "image/svg+xml" in attachment:
        return None, "an SVG image can carry a script, and is not shown: attach it as PNG or JPEG"
    return None, f"only PNG, JPEG, GIF and WebP images are shown, not {kinds}"


class _Renderer(IPythonRenderer):
    """nbconvert's renderer, an ``attachment:`` source left as it is (:meth:`SanitizeMarkdown._image_tag`
    puts the image in) instead of raising for an attachment it was not given."""

    def _embed_image_or_attachment(self, src: str) -> str:
        return src


@functools.lru_cache(maxsize=512)
def _rendered(text: str) -> str:
    """A markdown cell's text rendered and cleaned, kept by its text: most of a hand-in's markdown
    is the release's, the same in every hand-in (the last 512 cells rendered, each at most
    ``MAX_RENDERED_CELL`` characters)."""
    html = MarkdownWithMath(renderer=_Renderer(escape=False)).render(text)
    return bleach.clean(html, tags=_TAGS, attributes=_ATTRIBUTES, protocols=_PROTOCOLS, strip=True)


def _comment(text: str) -> str:
    """A TA's comment as nbgrader's feedback page may show it: its HTML escaped (shown as typed,
    as the course's own page does), its markdown formatted, its links safe."""
    if len(text) > MAX_RENDERED_CELL:
        return f"<div>\n<pre>{escape(text[:SHOWN])}</pre>\n</div>"
    html = bleach.clean(MarkdownWithMath(renderer=_Renderer(escape=True)).render(text), tags=_TAGS - {"img"},
                        attributes=_ATTRIBUTES, protocols=_PROTOCOLS[:3], strip=True)
    return "<div>\n" + re.sub(r"\n\s*\n", "\n", html.strip()) + "\n</div>"

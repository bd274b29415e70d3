"""Notebooks as the front ends students use save them, built from a solved notebook.

Each function takes a notebook (as ``json.load`` gives it) and returns what JupyterLab 4,
Notebook 7 or VS Code writes after a student pasted an image into a written answer:

* JupyterLab 4 and Notebook 7 (the same document model): ``nbformat_minor`` 5, a cell ``id`` on
  every cell, the pasted image as the markdown cell's ``attachments``
  (``{"image.png": {"image/png": <base64>}}``, referenced as ``![image.png](attachment:image.png)``),
  ``metadata.kernelspec`` "Python 3 (ipykernel)" and a full ``language_info``; Notebook 7 keeps an
  ipywidgets state in ``metadata.widgets`` when a widget was shown.
* VS Code: ``nbformat_minor`` 2 (no cell ids), ``metadata.vscode`` with the interpreter's hash,
  the kernel of the project's virtual environment (``display_name`` ".venv"), sources as lists
  of lines, the image attached the same way.
"""

import base64
import copy
import struct
import zlib

GRADE = "nbgrader"


def png(width: int = 4, height: int = 3, rgb: tuple = (200, 30, 30)) -> bytes:
    """A real PNG image (a filled rectangle), as a screenshot pasted from the clipboard is."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PNG_B64 = base64.b64encode(png()).decode()
SVG_SCRIPT = ('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" onload="alert(\'svg-onload\')">'
              '<script>alert("svg-script")</script><rect width="10" height="10"/></svg>')
SVG_B64 = base64.b64encode(SVG_SCRIPT.encode()).decode()

LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3", "version": "3.11.7"}
WIDGETS = {"application/vnd.jupyter.widget-state+json": {
    "state": {"3f1c0a6b2f3e4d5c9a8b7c6d5e4f3a2b": {
        "model_module": "@jupyter-widgets/controls", "model_module_version": "2.0.0",
        "model_name": "IntSliderModel",
        "state": {"description": "d_k", "layout": "IPY_MODEL_5a4b3c2d1e0f4a5b6c7d8e9f0a1b2c3d",
                  "max": 64, "min": 1, "value": 16, "_dom_classes": ["</script><script>alert(1)</script>"]}}},
    "version_major": 2, "version_minor": 0}}


def _answer(nb: dict, grade_id: str) -> dict:
    return next(c for c in nb["cells"] if (c.get("metadata", {}).get(GRADE) or {}).get("grade_id") == grade_id)


def _text(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def paste_image(nb: dict, grade_id: str, name: str = "image.png", mime: str = "image/png",
                data: str = PNG_B64) -> dict:
    """The written answer ``grade_id`` with an image pasted under its text, as JupyterLab does it."""
    cell = _answer(nb, grade_id)
    cell["source"] = _text(cell).rstrip("\n") + f"\n\n![{name}](attachment:{name})"
    cell.setdefault("attachments", {})[name] = {mime: data}
    return nb


def jupyterlab(nb: dict, grade_id: str) -> dict:
    """Saved by JupyterLab 4 after pasting a screenshot into the answer ``grade_id``."""
    nb = paste_image(copy.deepcopy(nb), grade_id)
    nb["nbformat"], nb["nbformat_minor"] = 4, 5
    nb["metadata"] = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                     "name": "python3"}, "language_info": dict(LANGUAGE_INFO)}
    for number, cell in enumerate(nb["cells"]):
        cell.setdefault("id", f"{number:08x}-6c1e-4a3b-9f2d-0c5e7a9b1d3f")
        if cell["cell_type"] == "code":
            cell.setdefault("execution_count", None)
            cell.setdefault("outputs", [])
    return nb


def notebook7(nb: dict, grade_id: str) -> dict:
    """Saved by Notebook 7 after a slider was shown and an image pasted: JupyterLab's format,
    with the widgets' state kept in the notebook's metadata."""
    nb = jupyterlab(nb, grade_id)
    nb["metadata"]["widgets"] = copy.deepcopy(WIDGETS)
    return nb


def vscode(nb: dict, grade_id: str, minor: int = 2) -> dict:
    """Saved by VS Code's notebook editor with the project's ``.venv`` kernel (nbformat 4.2:
    no cell ids; sources as lists of lines), an image pasted into the answer ``grade_id``."""
    nb = paste_image(copy.deepcopy(nb), grade_id)
    nb["nbformat"], nb["nbformat_minor"] = 4, minor
    nb["metadata"] = {
        "kernelspec": {"display_name": ".venv", "language": "python", "name": "python3"},
        "language_info": {**LANGUAGE_INFO, "version": "3.12.3"},
        "vscode": {"interpreter": {"hash": "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"}}}
    for cell in nb["cells"]:
        if minor < 5:
            cell.pop("id", None)
        text = _text(cell)
        cell["source"] = text.splitlines(keepends=True)
    return nb

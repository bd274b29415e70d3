"""nbgrader's OverwriteCells, with deleted test cells put back wherever they stood.

nbgrader (0.9) restores a deleted grade cell after the source cell that came
before it, but looks that neighbour up among the submission's grade and
solution cells only. In our notebooks a check cell follows locked ``show_*``
cells, so deleting ``check_<part>`` made nbgrader's autograde fail for the
whole submission (a KeyError) and the gradebook kept 0 for every part. This
subclass inserts the restored cell after the nearest earlier source cell the
submission still has (any cell with an nbgrader id), or first when there is
none; everything else is nbgrader's own OverwriteCells (sources, metadata and
points of grade cells overwritten from the gradebook), which looks every cell up in the gradebook
with a query of its own: here the notebook's cells are read once, three queries in all.
"""

from typing import Any

from nbformat import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.preprocessors import OverwriteCells


class RestoreCells(OverwriteCells):
    """OverwriteCells whose re-added grade cells never fail on their neighbours."""

    gradebook: Any          # the notebook's, opened by OverwriteCells.preprocess

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int) -> tuple[NotebookNode, dict]:
        if not isinstance(self.gradebook, _CellsReadOnce):      # the notebook's first cell
            self.gradebook = _CellsReadOnce(self.gradebook, self.notebook_id, self.assignment_id)
        return super().preprocess_cell(cell, resources, index)

    def add_missing_grade_cells(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        order = [cell.name for cell in source_nb.source_cells]
        sources = {cell.name: cell for cell in source_nb.source_cells}
        solutions = {cell.name for cell in source_nb.solution_cells}

        def present() -> dict[str, int]:
            ids: dict[str, int] = {}
            for i, cell in enumerate(nb.cells):
                grade_id = (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
                if grade_id:
                    ids.setdefault(grade_id, i)
            return ids

        for grade_cell in source_nb.grade_cells:
            have = present()
            if grade_cell.name in have or grade_cell.name not in sources:
                continue
            self.log.warning("Missing grade cell %s encountered, adding to notebook", grade_cell.name)
            cell = self.missing_cell_transform(sources[grade_cell.name], grade_cell.max_score,
                                               is_solution=grade_cell.name in solutions)
            cell["id"] = f"restored-{grade_cell.name}"[:64]
            earlier = order[:order.index(grade_cell.name)] if grade_cell.name in order else []
            after = next((have[name] for name in reversed(earlier) if name in have), None)
            nb.cells.insert(0 if after is None else after + 1, cell)
        return nb, resources


class _CellsReadOnce:
    """The Gradebook OverwriteCells opened for one notebook, its source, grade and task cells read in
    one query each: ``find_source_cell`` and ``find_graded_cell`` answer from them (the very objects
    nbgrader's queries return, and MissingEntry for a cell it has not); all else is the Gradebook's."""

    def __init__(self, gradebook: Gradebook, notebook: str, assignment: str) -> None:
        self._gradebook, self._notebook = gradebook, (notebook, assignment)
        try:
            found = gradebook.find_notebook(notebook, assignment)
        except MissingEntry:
            self._source: dict[str, Any] | None = None
            return
        self._source = {c.name: c for c in found.source_cells}
        self._graded = {c.name: c for c in found.task_cells}
        self._graded.update((c.name, c) for c in found.grade_cells)       # a grade cell first, as nbgrader looks

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gradebook, name)

    def find_source_cell(self, name: str, notebook: str, assignment: str) -> Any:
        if self._source is None or (notebook, assignment) != self._notebook:
            return self._gradebook.find_source_cell(name, notebook, assignment)
        if name not in self._source:
            raise MissingEntry(f"No such source cell: {assignment}/{notebook}/{name}")
        return self._source[name]

    def find_graded_cell(self, name: str, notebook: str, assignment: str) -> Any:
        if self._source is None or (notebook, assignment) != self._notebook or name not in self._graded:
            return self._gradebook.find_graded_cell(name, notebook, assignment)     # nbgrader's MissingEntry
        return self._graded[name]

"""nbgrader's CheckCellMetadata, with the schema of nbgrader's metadata checked once per process.

nbgrader (0.9) checks every cell's metadata with ``jsonschema.validate``, which first checks the
schema itself, on every call: most of autograde's time without a kernel went there (each cell,
twice per notebook). This is nbgrader's own check, its MetadataValidator with the same schema,
the same rules and the same errors, with the schema's jsonschema validator built once, and a
cell's metadata checked against the schema once per process (a release's cells are in every hand-in).
"""

import functools
import json

from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for
from nbformat import NotebookNode
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata as NbgraderCheckCellMetadata

_REMEMBERED = 10_000       # the most cells' metadata kept as valid (a release holds tens)


class _SchemaCheckedOnce(BaseMetadataValidator):
    """BaseMetadataValidator, its schema's validator built once: ``jsonschema.validate``'s steps,
    the first two (pick the validator class, check the schema) done here."""

    def __init__(self) -> None:
        super().__init__()
        cls = validator_for(self.schema)
        cls.check_schema(self.schema)
        self._schema = cls(self.schema)
        self._valid: set[str] = set()       # cells' metadata found valid, as JSON text

    def validate_cell(self, cell: NotebookNode) -> None:
        if "nbgrader" not in cell.metadata:
            return
        if cell.metadata["nbgrader"].get("schema_version", 0) != self.schema_version:
            super().validate_cell(cell)     # nbgrader's SchemaTooOldError or SchemaTooNewError
        # the same metadata is checked again and again: a release's cells are in every hand-in,
        # and autograde checks each notebook twice; only metadata found valid is remembered
        try:
            key = json.dumps(cell.metadata["nbgrader"], sort_keys=True)
        except (TypeError, ValueError):     # not JSON's values (nothing read from a file): checked each time
            key = None
        if key is not None and key in self._valid:
            return
        error = best_match(self._schema.iter_errors(cell.metadata["nbgrader"]))
        if error is not None:
            raise error
        if key is not None:
            if len(self._valid) >= _REMEMBERED:
                self._valid.clear()
            self._valid.add(key)


class _Validator(MetadataValidator, _SchemaCheckedOnce):
    """nbgrader's MetadataValidator (its rules beyond the schema: grade ids, points, cell types),
    whose call to its base class's check of a cell reaches :class:`_SchemaCheckedOnce`'s."""


@functools.cache
def _validator() -> _Validator:
    """One per process: nbgrader's reads three schema files for every notebook."""
    return _Validator()


class CheckCellMetadata(NbgraderCheckCellMetadata):
    """nbgrader's check that the nbgrader metadata is valid and its grade ids unique."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        try:
            _validator().validate_nb(nb)
        except ValidationError:
            return super().preprocess(nb, resources)      # nbgrader's own log and error
        return nb, resources

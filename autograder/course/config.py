"""course.yaml: the one file an instructor edits, loaded and validated.

Every problem stops with one line naming the file, the key and what is wrong,
because a typo found at release time is cheap and one found at grading is not.
The checks are written out rather than a JSON Schema (jsonschema is installed): half
of them cross files (a notebook's cells, the test files, the parts a part uses), which
a schema cannot say, and a schema's errors would need translating into these lines.
Which keys a mapping may and must have is read from the dataclass it becomes (a field
with a default is optional), and each is built by keyword, so a new setting is one field.
A field's metadata says what its key means (``doc``, and ``yaml`` where the type does not say how
it is written): docs/_ext/course_reference.py makes the table of every key from these fields.
"""

import dataclasses
import datetime
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from autograder.course.late_rules import LatePolicy, policy as _late_policy
from autograder.course.yaml_file import read as _read
from autograder.errors import ConfigError
from selfcheck.limits import Limits

# A part's id names its files (test_<id>.py), its test cell (check_<id>) and a CSV column
PART_ID = re.compile(r"[a-z][a-z0-9_]*")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LOADED: dict[str, Any] = {"loaded": True}    # a field's metadata: the loader fills it, course.yaml has no such key


def _doc(doc: str, **more: str) -> dict[str, str]:
    """A field's metadata: what its key means in course.yaml (and ``key``, ``yaml``: its name and
    how it is written there, where these are not the field's own)."""
    return {"doc": doc, **more}


@dataclass(kw_only=True)
class Part:
    id: str = field(metadata=_LOADED)
    assignment: str = field(metadata=_LOADED)    # the id of the assignment it is part of
    title: str = field(default="", metadata=_doc("what the tables and pages call it; its id when not given"))
    points: float = field(metadata=_doc("its points, written into the notebooks' grade cells at release"))
    cells: list[str] = field(metadata=_doc("the grade ids of the notebook's solution cells the part grades"))
    hidden: str = field(metadata=_doc("the hidden suite's file, relative to the course folder "
                                      "(outside solutions/)", key="tests", yaml="path"))
    uses: list[str] = field(default_factory=list, metadata=_doc(
        "other parts of the assignment whose functions this part's code may call (at grading the "
        "reference answers those calls unless that part earned full marks)"))

    @property
    def check_cell(self) -> str:
        """The grade id of the notebook's test cell that runs this part's checks."""
        return f"check_{self.id}"

    @property
    def public_file(self) -> str:
        """The name of its public tests' file, released beside the notebook."""
        return f"test_{self.id}.py"

    @property
    def public(self) -> str:
        """The path of its public tests, relative to the course root: in the part's folder, beside
        its hidden suite and mistakes; released as ``public_file``."""
        return os.path.join("parts", self.id, "public.py")


@dataclass(kw_only=True)
class Assignment:
    id: str = field(metadata=_LOADED)
    notebook: str = field(metadata=_doc("the notebook's file name in solutions/<assignment>/"))
    parts: list[Part] = field(metadata=_doc("its graded parts, each by its id", yaml="mapping: part id → part"))
    written: dict[str, float] = field(default_factory=dict, metadata=_doc(
        "answers graded by hand in formgrader: each answer cell's grade id (answer_...) and its points"))
    # in UTC without a time zone, as nbgrader keeps times
    due: datetime.datetime | None = field(default=None, metadata=_doc(
        "its due date; without it the assignment is never late", yaml="ISO 8601 date and time with its UTC offset"))

    def part(self, part_id: str) -> Part:
        return next(p for p in self.parts if p.id == part_id)

    def stand_in_cells(self, part: Part) -> set[str]:
        """The solution cells whose functions the grader answers when ``part`` is graded."""
        return {cell for used in part.uses for cell in self.part(used).cells}


@dataclass
class ClusterTLS:
    """What `course grade` shows a Dask cluster: the cluster's CA certificate, its own certificate and key."""
    ca: str = field(metadata=_doc("the cluster CA's certificate", yaml="path"))
    cert: str = field(metadata=_doc("the client's certificate", yaml="path"))
    key: str = field(metadata=_doc("the client's key (mode 600, this account's)", yaml="path"))


@dataclass(kw_only=True)
class Course:
    root: str = field(metadata=_LOADED)
    path: str = field(metadata=_LOADED)
    course_id: str = field(metadata=_doc("nbgrader's course id: students give it to fetch and submit"))
    limits: Limits = field(metadata=_doc("what a student's code may use at grading and in the self-check"))
    assignments: list[Assignment] = field(metadata=_doc(
        "the assignments, each by its id (its folder's name in solutions/)", yaml="mapping: assignment id → assignment"))
    exchange_root: str | None = field(default=None, metadata=_doc(
        "nbgrader's exchange, where students fetch and hand in; without it <course folder>/exchange; "
        "`course exchange --setup --root DIR` writes it", yaml="path"))
    similarity_threshold: float = field(default=0.5, metadata=_doc(
        "the cohort report flags two hand-ins whose own code is at least this share (0 to 1) alike"))
    cluster: str | None = field(default=None, metadata=_doc(
        "a Dask scheduler's tls:// address that `course grade` grades on; without it, locally"))
    cluster_tls: ClusterTLS | None = field(default=None, metadata=_doc(
        "the CA, certificate and key this client shows the cluster (`course cluster --certs DIR` makes them; "
        "~ and ${VARIABLE}s expanded, relative to the course folder)"))
    db_url: str | None = field(default=None, metadata=_doc(
        "nbgrader's gradebook as an SQLAlchemy URL, ${VARIABLE}s read from the environment; "
        "without it gradebook.db in the grading folder"))
    late: LatePolicy | None = field(default=None, metadata=_doc(
        "the late policy, its rules' keys below; without it a late hand-in loses nothing"))
    extensions: dict[str, dict[str, datetime.datetime]] = field(default_factory=dict, metadata=_doc(
        "a student's own due date per assignment, never before the assignment's",
        yaml="mapping: student id → assignment id → ISO 8601 date and time"))

    def assignment(self, assignment_id: str) -> Assignment:
        for a in self.assignments:
            if a.id == assignment_id:
                return a
        raise ConfigError(f"{self.path}: no assignment {assignment_id!r} "
                          f"(known: {', '.join(a.id for a in self.assignments)})")

    def source(self, assignment: Assignment, *names: str) -> str:
        return os.path.join(self.root, "solutions", assignment.id, *names)

    def release(self, assignment: Assignment, *names: str) -> str:
        return os.path.join(self.root, "assignments", assignment.id, *names)

    def data(self, *names: str) -> str:
        return os.path.join(self.root, "data", *names)


def _key(f: dataclasses.Field) -> str:
    return f.metadata.get("key", f.name)


def _keys(where, mapping, allowed, required=()):
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(mapping).__name__}")
    for key in mapping:
        if key not in allowed:
            raise ConfigError(f"{where}.{key}: unknown key (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in mapping:
            raise ConfigError(f"{where}.{key}: missing")


def _fields_keys(where, mapping, cls):
    """:func:`_keys` with the keys of ``cls``: its fields course.yaml gives (the loaded ones are not),
    required where the field has no default."""
    given = [f for f in dataclasses.fields(cls) if not f.metadata.get("loaded")]
    _keys(where, mapping, [_key(f) for f in given],
          [_key(f) for f in given if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING])


def _number(where, value, *, positive=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: must be a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ConfigError(f"{where}: must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return value


def check_cluster_address(where: str, address: str) -> None:
    """Refuse a Dask scheduler's address that is not TLS: on plain TCP anyone who reaches the port
    runs code on the workers, which grade as root."""
    if not address.startswith("tls://"):
        raise ConfigError(f"{where}: {address} is not a tls:// address: on plain TCP anyone who reaches the "
                          "scheduler's port can run code on its workers; start the scheduler and workers "
                          "with TLS and give tls://HOST:PORT (docs/how-to/cluster.md)")


def _cluster_tls(where, raw, root):
    _fields_keys(where, raw, ClusterTLS)
    paths = {}
    for key, value in raw.items():
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}.{key}: must be a file's path, got {value!r}")
        paths[key] = os.path.abspath(os.path.join(root, os.path.expanduser(os.path.expandvars(value))))
    return ClusterTLS(**paths)


def _limits(where, raw):
    """The limits, each a positive number of its field's type; a part's time at least a test's."""
    _fields_keys(where, raw, Limits)
    values = {f.name: _number(f"{where}.{f.name}", raw[f.name], positive=True) for f in dataclasses.fields(Limits)}
    if values["time_per_part"] < values["time_per_test"]:
        raise ConfigError(f"{where}.time_per_part ({values['time_per_part']}) must be at least "
                          f"limits.time_per_test ({values['time_per_test']})")
    kinds = get_type_hints(Limits)
    return Limits(**{name: kinds[name](value) for name, value in values.items()})


def _notebook_cells(path):
    from selfcheck.program import NotebookError, grade_id, read_notebook
    try:
        nb = read_notebook(path)
    except NotebookError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return {grade_id(c) for c in nb["cells"] if grade_id(c)}


def _part(where, aid, pid, pspec, spec, cells, root):
    """One part of assignment ``aid``, its cells, test cell, suites and the parts it uses checked."""
    _fields_keys(where, pspec, Part)
    part = Part(id=pid, assignment=aid, title=pspec.get("title", pid),
                points=_number(f"{where}.points", pspec["points"]), cells=list(pspec["cells"]),
                hidden=pspec["tests"], uses=list(pspec.get("uses") or []))
    for cell in part.cells:
        if cell not in cells:
            raise ConfigError(f"{where}.cells: {spec['notebook']} has no cell {cell!r}")
    if part.check_cell not in cells:
        raise ConfigError(f"{where}: {spec['notebook']} has no test cell '{part.check_cell}'")
    if not os.path.exists(os.path.join(root, part.hidden)):
        raise ConfigError(f"{where}.tests: {part.hidden} does not exist")
    if not os.path.exists(os.path.join(root, part.public)):
        raise ConfigError(f"{where}: public tests {part.public} do not exist")
    for used in part.uses:
        if used == pid or used not in (spec["parts"] or {}):
            raise ConfigError(f"{where}.uses: {used!r} is not another part of {aid} "
                              f"(known: {', '.join(p for p in spec['parts'] if p != pid)})")
    return part


def _assignment(where, aid, spec, root, seen_parts):
    """One assignment: its notebook, its parts (each in one assignment only) and written answers."""
    _fields_keys(where, spec, Assignment)
    nb_path = os.path.join(root, "solutions", aid, spec["notebook"])
    if not os.path.exists(nb_path):
        raise ConfigError(f"{where}.notebook: {os.path.relpath(nb_path)} does not exist")
    cells = _notebook_cells(nb_path)
    parts = []
    for pid, pspec in (spec["parts"] or {}).items():
        pwhere = f"{where}.parts.{pid}"
        if not isinstance(pid, str) or not PART_ID.fullmatch(pid):
            raise ConfigError(f"{pwhere}: a part's id must be lower-case letters, digits and _, "
                              "starting with a letter")
        if pid in seen_parts:
            raise ConfigError(f"{pwhere}: part appears in two assignments")
        seen_parts.add(pid)
        parts.append(_part(pwhere, aid, pid, pspec, spec, cells, root))
    written = spec.get("written") or {}
    _keys(f"{where}.written", written, sorted(c for c in cells if c.startswith("answer_")))
    for cell, pts in written.items():
        _number(f"{where}.written.{cell}", pts)
    due = _when(f"{where}.due", spec["due"]) if spec.get("due") is not None else None
    return Assignment(id=aid, notebook=spec["notebook"], parts=parts, written=dict(written), due=due)


def _when(where, value):
    """An ISO 8601 time with its offset (YAML reads one unquoted as a datetime), in UTC without a
    time zone; without an offset the time is ambiguous by hours, so it is refused."""
    why = ""
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip())
        except ValueError as exc:        # "month must be in 1..12": worth saying; "Invalid isoformat" is not
            why = "" if str(exc).startswith("Invalid") else f" ({exc})"
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        why, value = " (a day with no time of day)", value.isoformat()
    if not isinstance(value, datetime.datetime):
        raise ConfigError(f"{where}: must be a date and time such as 2026-12-08T23:59:00+00:00, "
                          f"got {value!r}{why}")
    if value.tzinfo is None:
        raise ConfigError(f"{where}: {value.isoformat()} has no UTC offset (write e.g. "
                          f"{value.isoformat()}+00:00)")
    return value.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def _extensions(where, raw, assignments):
    """student -> assignment -> that student's own due date, never before the assignment's."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping of student ids, got {type(raw).__name__}")
    dues = {a.id: a.due for a in assignments}
    found: dict[str, dict[str, datetime.datetime]] = {}
    for student, given in raw.items():
        _keys(f"{where}.{student}", given, list(dues))
        found[str(student)] = {}
        for aid, value in given.items():
            key = f"{where}.{student}.{aid}"
            if dues[aid] is None:
                raise ConfigError(f"{key}: {aid} has no due: date to extend")
            when = _when(key, value)
            if when < dues[aid]:
                raise ConfigError(f"{key}: {when.isoformat()} UTC is before {aid}'s due date "
                                  f"({dues[aid].isoformat()} UTC)")
            found[str(student)][aid] = when
    return found


def load(path: str | None = None) -> Course:
    """Read and validate course.yaml (default: the one at the course root)."""
    path = path or os.path.join(ROOT, "course.yaml")
    root = os.path.dirname(os.path.abspath(path))
    name = os.path.relpath(path)
    raw = _read(path, name)
    _fields_keys(name, raw, Course)
    values: dict[str, Any] = {"course_id": str(raw["course_id"])}
    exchange = raw.get("exchange_root")
    if exchange is not None and (not isinstance(exchange, str) or not exchange.strip()):
        raise ConfigError(f"{name}: exchange_root: must be a folder's path, got {exchange!r}")
    if exchange:
        values["exchange_root"] = os.path.abspath(os.path.join(root, os.path.expanduser(exchange)))
    if "similarity_threshold" in raw:
        similar = _number(f"{name}: similarity_threshold", raw["similarity_threshold"], positive=True)
        if similar > 1:
            raise ConfigError(f"{name}: similarity_threshold: a share of shared code, at most 1, got {similar!r}")
        values["similarity_threshold"] = float(similar)
    for key, what in (("cluster", "a Dask scheduler's address"), ("db_url", "an SQLAlchemy URL")):
        if raw.get(key) is not None and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise ConfigError(f"{name}: {key}: must be {what}, got {raw[key]!r}")
    if raw.get("cluster_tls") is not None:
        values["cluster_tls"] = _cluster_tls(f"{name}: cluster_tls", raw["cluster_tls"], root)
    if raw.get("cluster") is not None:
        check_cluster_address(f"{name}: cluster", raw["cluster"])
        if "cluster_tls" not in values:
            raise ConfigError(f"{name}: cluster: needs cluster_tls, the CA, certificate and key this "
                              "client shows the cluster (`course cluster --certs DIR` makes a set)")
        values["cluster"] = raw["cluster"]
    if raw.get("db_url"):
        values["db_url"] = os.path.expandvars(raw["db_url"])
    values["limits"] = _limits(f"{name}: limits", raw["limits"])
    if not isinstance(raw["assignments"], dict) or not raw["assignments"]:
        raise ConfigError(f"{name}: assignments: expected at least one assignment")
    seen_parts: set[str] = set()
    values["assignments"] = [_assignment(f"{name}: assignments.{aid}", aid, spec, root, seen_parts)
                             for aid, spec in raw["assignments"].items()]
    if raw.get("late") is not None:
        values["late"] = _late_policy(f"{name}: late", raw["late"], _number)
    if raw.get("extensions") is not None:
        values["extensions"] = _extensions(f"{name}: extensions", raw["extensions"], values["assignments"])
    return Course(root=root, path=path, **values)


def write_exchange_root(course: Course, root: str) -> Course:
    """Set course.yaml's ``exchange_root`` (after ``course_id``), keeping its comments; returns the
    course it now describes. Every nbgrader command in the course's folders reads it from there."""
    with open(course.path) as fh:
        text = fh.read()
    line = f"exchange_root: {json.dumps(os.path.abspath(root))}"
    if re.search(r"^exchange_root:.*$", text, flags=re.M):
        text = re.sub(r"^exchange_root:.*$", lambda _: line, text, count=1, flags=re.M)
    else:
        text = re.sub(r"^(course_id:.*)$", lambda m: f"{m.group(1)}\n{line}", text, count=1, flags=re.M)
    with open(course.path, "w") as fh:
        fh.write(text)
    return load(course.path)

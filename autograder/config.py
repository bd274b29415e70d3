"""course.yaml: the one file an instructor edits, loaded and validated.

Every problem stops with one line naming the file, the key and what is wrong,
because a typo found at release time is cheap and one found at grading is not.
The checks are written out rather than a JSON Schema (jsonschema is installed): half
of them cross files (a notebook's cells, the test files, the parts a part uses), which
a schema cannot say, and a schema's errors would need translating into these lines.
"""

import json
import os
import re
from dataclasses import dataclass, field

import yaml

from autograder.errors import CourseError

# A part's id names its files (test_<id>.py), its test cell (check_<id>) and a CSV column
PART_ID = re.compile(r"[a-z][a-z0-9_]*")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ConfigError(CourseError):
    """course.yaml is wrong; the message is one line."""


@dataclass
class Part:
    id: str
    title: str
    points: float
    cells: list
    hidden: str            # path of the hidden suite, relative to the course root
    public: str            # path of the public tests, relative to the course root
    uses: list = field(default_factory=list)   # parts whose functions this part's code may call


@dataclass
class Assignment:
    id: str
    notebook: str
    parts: list
    written: dict          # grade id of a hand-graded answer -> points
    files: list = field(default_factory=list)

    def part(self, part_id):
        return next(p for p in self.parts if p.id == part_id)

    def stand_in_cells(self, part):
        """The solution cells whose functions the grader answers when ``part`` is graded."""
        return {cell for used in part.uses for cell in self.part(used).cells}


@dataclass
class ClusterTLS:
    """What `course grade` shows a Dask cluster: the cluster's CA certificate, its own certificate and key."""
    ca: str
    cert: str
    key: str


@dataclass
class Course:
    root: str
    path: str
    course_id: str
    time_per_test: float
    memory_mb: int
    time_per_part: float
    assignments: list
    exchange_root: str = None      # nbgrader's exchange; None: <course folder>/exchange
    similarity_threshold: float = 0.5   # the cohort report flags pairs of hand-ins from this score
    cluster: str = None            # a Dask scheduler's tls:// address `course grade` grades on; None: locally
    cluster_tls: ClusterTLS = None  # the client's credentials for that cluster
    db_url: str = None             # the gradebook's SQLAlchemy URL; None: <grading folder>/gradebook.db

    def assignment(self, assignment_id):
        for a in self.assignments:
            if a.id == assignment_id:
                return a
        raise ConfigError(f"{self.path}: no assignment {assignment_id!r} "
                          f"(known: {', '.join(a.id for a in self.assignments)})")

    def source(self, assignment, *names):
        return os.path.join(self.root, "solutions", assignment.id, *names)

    def release(self, assignment, *names):
        return os.path.join(self.root, "assignments", assignment.id, *names)

    def data(self, *names):
        return os.path.join(self.root, "data", *names)


def _keys(where, mapping, allowed, required=()):
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(mapping).__name__}")
    for key in mapping:
        if key not in allowed:
            raise ConfigError(f"{where}.{key}: unknown key (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in mapping:
            raise ConfigError(f"{where}.{key}: missing")


def _number(where, value, *, positive=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: must be a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ConfigError(f"{where}: must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return value


def check_cluster_address(where, address):
    """Refuse a Dask scheduler's address that is not TLS: on plain TCP anyone who reaches the port
    runs code on the workers, which grade as root."""
    if not address.startswith("tls://"):
        raise ConfigError(f"{where}: {address} is not a tls:// address: on plain TCP anyone who reaches the "
                          "scheduler's port can run code on its workers; start the scheduler and workers "
                          "with TLS and give tls://HOST:PORT (README, \"Bigger courses\")")


def _cluster_tls(where, raw, root):
    _keys(where, raw, ("ca", "cert", "key"), ("ca", "cert", "key"))
    paths = {}
    for key, value in raw.items():
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}.{key}: must be a file's path, got {value!r}")
        paths[key] = os.path.abspath(os.path.join(root, os.path.expanduser(os.path.expandvars(value))))
    return ClusterTLS(**paths)


def _notebook_cells(path):
    from selfcheck.program import NotebookError, grade_id, read_notebook
    try:
        nb = read_notebook(path)
    except NotebookError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return {grade_id(c) for c in nb["cells"] if grade_id(c)}


def load(path=None):
    """Read and validate course.yaml (default: the one at the course root)."""
    path = path or os.path.join(ROOT, "course.yaml")
    root = os.path.dirname(os.path.abspath(path))
    name = os.path.relpath(path)
    try:
        with open(path) as fh:
            raw = yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{name}: file not found") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{name}: not valid YAML{line} ({getattr(exc, 'problem', exc)})") from None
    _keys(name, raw, ("course_id", "limits", "assignments", "exchange_root", "similarity_threshold",
                     "cluster", "cluster_tls", "db_url"),
          ("course_id", "limits", "assignments"))
    exchange = raw.get("exchange_root")
    if exchange is not None and (not isinstance(exchange, str) or not exchange.strip()):
        raise ConfigError(f"{name}: exchange_root: must be a folder's path, got {exchange!r}")
    similar = _number(f"{name}: similarity_threshold", raw.get("similarity_threshold", 0.5), positive=True)
    if similar > 1:
        raise ConfigError(f"{name}: similarity_threshold: a share of shared code, at most 1, got {similar!r}")
    for key, what in (("cluster", "a Dask scheduler's address"), ("db_url", "an SQLAlchemy URL")):
        if raw.get(key) is not None and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise ConfigError(f"{name}: {key}: must be {what}, got {raw[key]!r}")
    cluster_tls = None
    if raw.get("cluster_tls") is not None:
        cluster_tls = _cluster_tls(f"{name}: cluster_tls", raw["cluster_tls"], root)
    if raw.get("cluster") is not None:
        check_cluster_address(f"{name}: cluster", raw["cluster"])
        if cluster_tls is None:
            raise ConfigError(f"{name}: cluster: needs cluster_tls, the CA, certificate and key this "
                              "client shows the cluster (`course cluster --certs DIR` makes a set)")
    _keys(f"{name}: limits", raw["limits"], ("time_per_test", "time_per_part", "memory_mb"),
          ("time_per_test", "time_per_part", "memory_mb"))
    time_limit = _number(f"{name}: limits.time_per_test", raw["limits"]["time_per_test"], positive=True)
    part_limit = _number(f"{name}: limits.time_per_part", raw["limits"]["time_per_part"], positive=True)
    if part_limit < time_limit:
        raise ConfigError(f"{name}: limits.time_per_part ({part_limit}) must be at least "
                          f"limits.time_per_test ({time_limit})")
    memory = _number(f"{name}: limits.memory_mb", raw["limits"]["memory_mb"], positive=True)
    if not isinstance(raw["assignments"], dict) or not raw["assignments"]:
        raise ConfigError(f"{name}: assignments: expected at least one assignment")

    assignments, seen_parts = [], set()
    for aid, spec in raw["assignments"].items():
        where = f"{name}: assignments.{aid}"
        _keys(where, spec, ("notebook", "parts", "written"), ("notebook", "parts"))
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
            _keys(pwhere, pspec, ("title", "points", "cells", "tests", "uses"), ("points", "cells", "tests"))
            points = _number(f"{pwhere}.points", pspec["points"])
            for cell in pspec["cells"]:
                if cell not in cells:
                    raise ConfigError(f"{pwhere}.cells: {spec['notebook']} has no cell {cell!r}")
            if f"check_{pid}" not in cells:
                raise ConfigError(f"{pwhere}: {spec['notebook']} has no test cell 'check_{pid}'")
            if not os.path.exists(os.path.join(root, pspec["tests"])):
                raise ConfigError(f"{pwhere}.tests: {pspec['tests']} does not exist")
            public = os.path.join("solutions", aid, f"test_{pid}.py")
            if not os.path.exists(os.path.join(root, public)):
                raise ConfigError(f"{pwhere}: public tests {public} do not exist")
            uses = pspec.get("uses") or []
            for used in uses:
                if used == pid or used not in (spec["parts"] or {}):
                    raise ConfigError(f"{pwhere}.uses: {used!r} is not another part of {aid} "
                                      f"(known: {', '.join(p for p in spec['parts'] if p != pid)})")
            parts.append(Part(pid, pspec.get("title", pid), points, list(pspec["cells"]),
                              pspec["tests"], public, list(uses)))
        written = spec.get("written") or {}
        _keys(f"{where}.written", written, sorted(c for c in cells if c.startswith("answer_")))
        for cell, pts in written.items():
            _number(f"{where}.written.{cell}", pts)
        assignments.append(Assignment(aid, spec["notebook"], parts, dict(written)))
    return Course(root, path, str(raw["course_id"]), float(time_limit), int(memory),
                  float(part_limit), assignments,
                  os.path.abspath(os.path.join(root, os.path.expanduser(exchange))) if exchange else None,
                  float(similar), raw.get("cluster"), cluster_tls,
                  os.path.expandvars(raw["db_url"]) if raw.get("db_url") else None)


def write_exchange_root(course, root):
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

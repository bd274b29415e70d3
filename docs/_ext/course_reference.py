"""The reference pages made from the code, so that they cannot drift from it.

When a build starts, this writes Markdown into ``docs/reference/generated/`` (never committed)
from what the course itself runs on:

* ``commands.md``: every `course` command and flag, from the argument parser `course` builds
  (autograder/cli.py; `course experiment`'s from autograder/experiment/command.py);
* ``course_yaml.md``: every course.yaml key, with its type, default and meaning, from the
  dataclass fields the loader reads the allowed keys from (autograder/course/config.py,
  selfcheck/limits.py);
* ``outputs.md``: every file of a grading folder, from ``autograder.pipeline.OUTPUTS``, the list
  `course grade` prints;
* ``limits.md``: the course's limits (course.yaml's values) and the fixed bounds, each the
  constant and comment in the module that enforces it;
* ``nbgrader.md``: the nbgrader settings every course folder gets, from
  autograder/nbgrader/settings.py.

The reference pages include these files. A file is written only when its text changed, so an
unchanged build stays incremental, and a changed one makes Sphinx read its page again.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import datetime
import os
import re
import sys
import types
import typing
from collections.abc import Iterator

DOCS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(DOCS)
OUT = os.path.join(DOCS, "reference", "generated")
sys.path.insert(0, ROOT)


# --- the command line ------------------------------------------------------------------------

class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser


@contextlib.contextmanager
def _caught_parser() -> Iterator[None]:
    """The parser a command builds, caught as it parses (the command itself never runs)."""
    def parse(self, *args, **kwargs):
        raise _Parsed(self)
    saved = argparse.ArgumentParser.parse_known_args
    argparse.ArgumentParser.parse_known_args = parse  # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_known_args = saved  # type: ignore[method-assign]


def course_parser() -> argparse.ArgumentParser:
    from autograder import cli
    with _caught_parser():
        try:
            cli.main([])
        except _Parsed as caught:
            return caught.parser
    raise RuntimeError("autograder.cli.main parsed no arguments")


def experiment_parser() -> argparse.ArgumentParser:
    from autograder.course import config
    from autograder.experiment import command
    with _caught_parser():
        try:
            command.main([], config.load())
        except _Parsed as caught:
            return caught.parser
    raise RuntimeError("autograder.experiment.command.main parsed no arguments")


def _subcommands(parser: argparse.ArgumentParser) -> tuple[dict[str, str], dict[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return helps, dict(action.choices)
    return {}, {}


def _flag(action: argparse.Action) -> str:
    """How the flag is written: ``--jobs JOBS``, ``--resume``, ``submitted``."""
    if not action.option_strings:
        return action.metavar or action.dest
    name = max(action.option_strings, key=len)
    if action.nargs == 0:
        return name
    return f"{name} {action.metavar or action.dest.upper()}"


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS):
        return ""
    if action.nargs == argparse.REMAINDER:
        return ""
    if isinstance(action.default, os.PathLike):
        return f"`{os.path.relpath(action.default, ROOT)}`"
    return f"`{action.default}`"


def _usage(parser: argparse.ArgumentParser) -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        return parser.format_usage().strip().removeprefix("usage: ")
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def _cell(text: str) -> str:
    """One line of a table's cell: ``|`` escaped, and ``<`` outside code, which Markdown would
    read as the start of an HTML tag."""
    pieces = " ".join(text.split()).replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("<", "\\<") for i, p in enumerate(pieces))


def _sentence(text: str) -> str:
    text = _cell(text)
    if not text:
        return ""
    first = text.split(" ", 1)[0]
    if first.replace("-", "").isalpha() and first.islower():          # not a file's or a flag's name
        text = text[0].upper() + text[1:]
    return text + ("" if text.endswith(".") else ".")


def _options(program: str, parser: argparse.ArgumentParser) -> list[str]:
    lines = ["```{program} " + program + "\n```", "", "```text", _usage(parser), "```", ""]
    actions = [a for a in parser._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]
    for action in actions:
        default = _default(action)
        what = _sentence(action.help or "")
        if action.choices:
            what += (" " if what else "") + "One of " + ", ".join(f"`{c}`" for c in action.choices) + "."
        if default == "required":
            what += (" " if what else "") + "Required."
        elif default and "default" not in what.lower():
            what += (" " if what else "") + f"Default: {default}."
        lines += [f"```{{option}} {_flag(action)}", what, "```", ""]
    return lines


def commands_md() -> str:
    parser = course_parser()
    helps, subs = _subcommands(parser)
    lines = ["## `course`", ""] + _options("course", parser)
    for name, sub in subs.items():
        lines += [f"(command-{name})=", f"## `course {name}`", "", _sentence(helps.get(name, "")), ""]
        if name == "experiment":
            lines += ["Its arguments are passed on to the experiment's own parser:", ""]
            inner = experiment_parser()
            inner.prog = "course experiment"          # it is named after the program that runs it
            lines += _options("course experiment", inner)
        else:
            lines += _options(f"course {name}", sub)
    return "\n".join(lines)


# --- course.yaml -----------------------------------------------------------------------------

LABELS = {"Limits": "course-yaml-limits", "LatePolicy": "course-yaml-late", "ClusterTLS": "course-yaml-cluster-tls"}


def _type(hint: object) -> str:
    """A field's Python type, said as course.yaml writes it."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join(_type(a) for a in inner)
    if origin is list:
        return f"list of {_type(args[0])}s"
    if origin is dict:
        return f"mapping: {_type(args[0])} → {_type(args[1])}"
    if dataclasses.is_dataclass(hint):
        return f"mapping: {{ref}}`below <{LABELS[hint.__name__]}>`"
    return {str: "string", float: "number", int: "integer", bool: "true or false",
            datetime.datetime: "date and time"}.get(hint, getattr(hint, "__name__", str(hint)))  # type: ignore[call-overload]


def _field_default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return "—" if f.default in (None, "") else f"`{f.default!r}`".replace("'", "")
    if f.default_factory is not dataclasses.MISSING:
        made = f.default_factory()
        return "—" if not made else f"`{made!r}`"
    return "**required**"


def _key_table(classes: tuple[type, ...], prefix: str) -> list[str]:
    """The table of the keys the dataclasses ``classes`` read (a late rule's key without a default
    is optional all the same: without it the rule is off)."""
    rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.metadata.get("loaded"):
                continue
            key = f.metadata.get("key", f.name)
            kind = f.metadata.get("yaml") or _type(hints[f.name])
            doc = f.metadata.get("doc")
            if not doc:
                raise RuntimeError(f"{cls.__module__}.{cls.__name__}.{f.name} has no doc in its metadata")
            default = _field_default(f)
            if prefix == "late." and default == "**required**":
                default = "—"
            rows.append(f"| `{prefix}{key}` | {_cell(kind)} | {default} | {_cell(doc)} |")
    return rows


def course_yaml_md() -> str:
    from autograder.course import config, late_rules
    from selfcheck.limits import Limits
    sections = [
        ("The course", "course-yaml-course", (config.Course,), "",
         "The top level of course.yaml."),
        ("`limits:`", "course-yaml-limits", (Limits,), "limits.",
         "What a student's code may use, at grading and in the released self-check alike."),
        ("An assignment", "course-yaml-assignment", (config.Assignment,), "assignments.ID.",
         "Each entry of `assignments:`, under its id."),
        ("A part", "course-yaml-part", (config.Part,), "assignments.ID.parts.PART.",
         "Each entry of an assignment's `parts:`, under the part's id (lower-case letters, digits and `_`, "
         "starting with a letter; a part belongs to one assignment)."),
        ("`late:`", "course-yaml-late", late_rules.RULES, "late.",
         "The course's one late policy: each key belongs to one rule (a class of "
         "autograder/course/late_rules.py: " + ", ".join(f"`{r.__name__}`" for r in late_rules.RULES)
         + "), which applies when any of its keys is given, in that order."),
        ("`cluster_tls:`", "course-yaml-cluster-tls", (config.ClusterTLS,), "cluster_tls.",
         "The client's credentials for the Dask cluster."),
    ]
    lines: list[str] = []
    for title, label, cls, prefix, intro in sections:
        lines += [f"({label})=", f"## {title}", "", intro, ""] + _key_table(cls, prefix) + [""]
    return "\n".join(lines)


# --- output files ----------------------------------------------------------------------------

def outputs_md() -> str:
    from autograder import pipeline
    lines = ["| file | holds | `course grade` prints it as |", "| --- | --- | --- |"]
    for o in pipeline.OUTPUTS:
        shown = f"`{o.label}`" + (f" ({_cell(o.note)})" if o.note else "") if o.label else "—"
        lines.append(f"| `{o.path}` | {_cell(o.meaning)} | {shown} |")
    return "\n".join(lines) + "\n"


# --- limits ----------------------------------------------------------------------------------

# the modules whose constants bound what a hand-in or a student's process may do
BOUNDS = (
    ("selfcheck.student", "the student's process"),
    ("selfcheck.process", "the student's process, started and read"),
    ("selfcheck.wire", "what crosses from the student's process"),
    ("selfcheck.program", "a notebook, before any sandbox"),
    ("autograder.sandbox.jails", "the sandbox's disk"),
    ("autograder.sandbox.cgroup", "the sandbox's cgroup (as root)"),
    ("autograder.grade.submission_time", "a hand-in in the exchange"),
    ("autograder.grade.handin", "files of the exchange"),
    ("autograder.nbgrader.preprocessors.sanitizemarkdown", "written answers shown in formgrader and feedback"),
    ("autograder.report.similarity", "similarity"),
    ("autograder.report.code_in_strings", "code read from strings, for similarity"),
    ("autograder.grade.grading", "grading"),
    ("autograder.grade.suites", "the reference's stand-ins"),
)


def _comment(lines: list[str], at: int) -> str:
    """The comment on a constant's line, else the comment block above it and the constants
    written under that block."""
    if "#" in lines[at]:
        return lines[at].split("#", 1)[1].strip()
    above = at - 1
    while above >= 0 and re.match(r"[A-Z_]+ = [^#]*$", lines[above]):
        above -= 1
    block = []
    while above >= 0 and lines[above].startswith("#"):
        block.insert(0, lines[above].lstrip("# ").strip())
        above -= 1
    return " ".join(block)


def _constants(module: str) -> list[tuple[str, object, str]]:
    """A module's numeric constants, each with its value and the comment on its line."""
    path = os.path.join(ROOT, *module.split(".")) + ".py"     # read, not imported: importing grading is seconds
    with open(path) as fh:
        source = fh.read()
    lines = source.splitlines()
    found = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        try:        # a number or an expression of numbers (16 << 20), nothing it would need to import
            value = eval(compile(ast.Expression(node.value), path, "eval"), {"__builtins__": {}})
        except Exception:  # noqa: BLE001 - not a constant of numbers
            continue
        if not name.isupper() or name.startswith("_") or isinstance(value, bool):
            continue
        if not (isinstance(value, (int, float)) or (isinstance(value, tuple) and value
                                                     and all(isinstance(v, (int, float)) for v in value))):
            continue
        found.append((name, value, _comment(lines, node.lineno - 1)))
    return found


def limits_md() -> str:
    from autograder.course import config
    from selfcheck.limits import Limits
    course = config.load()
    lines = ["## The course's limits (course.yaml)", "",
             "| key | value in this course | meaning |", "| --- | --- | --- |"]
    for f in dataclasses.fields(Limits):
        lines.append(f"| `limits.{f.name}` | {getattr(course.limits, f.name)} | {_cell(f.metadata['doc'])} |")
    lines += ["", "## Fixed bounds", "",
              "Each is a constant of the module that enforces it, with the comment beside it there.", ""]
    for module, what in BOUNDS:
        lines += [f"### {what[0].upper() + what[1:]}", "", f"`{module}`", "",
                  "| constant | value | meaning |", "| --- | --- | --- |"]
        for name, value, comment in _constants(module):
            shown = f"{value:,}" if isinstance(value, int) else str(value)
            lines.append(f"| `{name}` | {shown} | {_cell(comment)} |")
        lines.append("")
    return "\n".join(lines) + "\n"


# --- nbgrader --------------------------------------------------------------------------------

def nbgrader_md() -> str:
    from autograder.course import config
    from autograder.nbgrader import settings
    course = config.load()
    made = settings.settings(course, "/COURSE-FOLDER")
    root = os.path.realpath(course.root)
    lines = ["| setting | value |", "| --- | --- |"]
    for section in sorted(made):
        for name in sorted(made[section]):
            value = made[section][name]
            text = repr(value).replace(root, "<course>").replace("/COURSE-FOLDER", "<grading folder>")
            lines.append(f"| `c.{section}.{name}` | `{_cell(text)}` |")
    return "\n".join(lines) + "\n"


# --- the build -------------------------------------------------------------------------------

PAGES = {"commands.md": commands_md, "course_yaml.md": course_yaml_md, "outputs.md": outputs_md,
         "limits.md": limits_md, "nbgrader.md": nbgrader_md}
HEADER = "<!-- made by docs/_ext/course_reference.py from the code; never edit -->\n\n"


def write_all(app: object = None) -> list[str]:
    """Write each generated page whose text changed; returns the names written."""
    os.makedirs(OUT, exist_ok=True)
    written = []
    for name, make in PAGES.items():
        text = HEADER + make()
        path = os.path.join(OUT, name)
        if os.path.exists(path):
            with open(path) as fh:
                if fh.read() == text:
                    continue
        with open(path, "w") as fh:
            fh.write(text)
        written.append(name)
    return written


def setup(app):  # the Sphinx extension
    app.connect("builder-inited", write_all)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}

"""Reading a YAML file an instructor wrote, with every failure one line naming the file."""

from typing import Any

import yaml

from autograder.errors import ConfigError


class _Loader(yaml.SafeLoader):
    """YAML's safe loader, keeping as text a time it cannot make (``2026-13-08``, ``T25:59``),
    where PyYAML raises a bare ValueError: :func:`autograder.course.config._when` names the key and shows the text."""


def _timestamp(loader, node):
    try:
        return loader.construct_yaml_timestamp(node)
    except ValueError:
        return loader.construct_scalar(node)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def read(path: str, name: str) -> Any:
    """The YAML at ``path`` (shown as ``name``), or one line saying why it cannot be read."""
    try:
        with open(path) as fh:
            return yaml.load(fh, Loader=_Loader)  # noqa: S506 - a SafeLoader
    except FileNotFoundError:
        raise ConfigError(f"{name}: file not found") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{name}: not valid YAML{line} ({getattr(exc, 'problem', exc)})") from None

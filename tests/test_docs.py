"""The README and the documentation site: what they point at exists, and the lists made from the
code name what the code does. (`make docs` builds the site itself, warnings as errors.)"""

import fnmatch
import os
import re
import sys

from autograder import commands, pipeline

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_short_gives_the_commands_and_its_links_exist():
    with open(os.path.join(ROOT, "README.md")) as fh:
        text = fh.read()
    assert len(text.splitlines()) <= 150
    for command in ("make demo", "make test", "make check", "make docs"):
        assert command in text, command
    links = [link for link in LINK.findall(text) if "://" not in link]
    assert any(link.endswith("tutorials/instructor.md") for link in links)
    for link in links:
        assert os.path.exists(os.path.join(ROOT, link)), link


def test_every_output_file_is_ignored_by_git_and_removed_by_make_clean():
    with open(os.path.join(ROOT, ".gitignore")) as fh:
        ignored = [line.strip().rstrip("/") for line in fh if line.strip() and not line.startswith("#")]
    with open(os.path.join(ROOT, "Makefile")) as fh:
        clean = re.search(r"^clean:\n\trm -rf (.*?)(?:\n\S|\Z)", fh.read(), re.M | re.S)[1].split()
    for output in pipeline.OUTPUTS:
        top = output.path.split("/")[0]
        assert any(fnmatch.fnmatch(top, pattern) for pattern in ignored), f"{output.path}: add {top} to .gitignore"
        assert top in clean, f"{output.path}: add {top} to the Makefile's clean target"


def test_course_grade_prints_each_printed_output_from_the_list():
    printed = commands._where("/grading")
    for output in pipeline.OUTPUTS:
        if output.label:
            assert os.path.basename(output.path.split("/<")[0]) in printed, output.path
    assert printed.splitlines()[0].startswith("parts:      /grading/parts.csv")


def test_the_reference_is_made_from_the_code():
    sys.path.insert(0, os.path.join(ROOT, "docs", "_ext"))
    try:
        import course_reference
    finally:
        sys.path.pop(0)
    from autograder.course import config, late_rules
    commands = course_reference.commands_md()
    parser = course_reference.course_parser()
    _, subs = course_reference._subcommands(parser)
    for name, sub in subs.items():                 # every command and every flag
        assert f"## `course {name}`" in commands
        for action in sub._actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag != "--help":
                    assert flag in commands, (name, flag)
    keys = course_reference.course_yaml_md()
    import dataclasses
    for cls in (config.Course, config.Assignment, config.Part, config.ClusterTLS, *late_rules.RULES):
        for f in dataclasses.fields(cls):
            if not f.metadata.get("loaded"):
                assert f.metadata.get("doc"), f"{cls.__name__}.{f.name} says nothing of its key"
                assert f"{f.metadata.get('key', f.name)}` |" in keys

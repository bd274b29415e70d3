"""The README and the documentation site: what they point at exists, and the lists made from the
code name what the code does. (`make docs` builds the site itself, warnings as errors.)"""

import os
import re
import shutil
import subprocess
import sys
import uuid

from autograder import commands, export, pipeline

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


# what .gitignore ignores that `make clean` keeps: the environment, caches and the corpus, and the
# top's CSV and HTML files other than the outputs (roster.csv is the instructor's)
KEPT = {".venv", "__pycache__", "*.egg-info", ".ipynb_checkpoints", "tinyshakespeare.txt", ".mypy_cache",
        ".pytest_cache", "*.csv", "*.html"}


def test_every_output_file_is_ignored_by_git_and_removed_by_make_clean(tmp_path):
    """Both read the one list of outputs: .gitignore by its patterns (as git reads them, in a
    scratch repository), the Makefile's clean target from pipeline.OUTPUTS itself. What else clean
    removes (its CLEANED) is ignored too, and every other pattern of .gitignore is removed or KEPT."""
    shutil.copy(os.path.join(ROOT, ".gitignore"), tmp_path / ".gitignore")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    tops = sorted({output.path.split("/")[0] for output in pipeline.OUTPUTS})
    for output in pipeline.OUTPUTS:             # a folder's pattern matches a folder
        if "/" in output.path:
            (tmp_path / output.path.split("/")[0]).mkdir(exist_ok=True)
    ignored = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "--no-index", *tops],
                             capture_output=True, text=True).stdout.split()
    assert ignored == tops, f"add to .gitignore: {sorted(set(tops) - set(ignored))}"
    with open(os.path.join(ROOT, "Makefile")) as fh:
        makefile = fh.read()
    clean = re.search(r"^clean:\n\t(.*?)(?:\n\S|\Z)", makefile, re.M | re.S)[1]
    assert "from autograder.pipeline import OUTPUTS" in clean and "$(CLEANED)" in clean, clean
    cleaned = re.search(r"^CLEANED := (.*)$", makefile, re.M)[1].split()
    names = [name.replace("*", "x") + "/" for name in cleaned]      # as a folder: matched either way
    ignored = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "--no-index", *names],
                             capture_output=True, text=True).stdout.split()
    assert ignored == names, f"add to .gitignore: {sorted(set(names) - set(ignored))}"
    with open(os.path.join(ROOT, ".gitignore")) as fh:
        patterns = {line.strip().strip("/") for line in fh if line.strip() and not line.startswith("#")}
    stray = patterns - KEPT - set(cleaned) - set(tops)
    assert not stray, f"add to the Makefile's CLEANED, or to KEPT here: {sorted(stray)}"


def test_an_export_module_is_found_with_nothing_else_to_change(tmp_path, monkeypatch):
    """docs/how-to/new-export.md: a module of autograder/export/ declaring an EXPORT is found (here
    one written in a folder added to the package's path, named so that no real export, a
    Blackboard one say, shadows it), and the pipeline writes what is found, in turn, its files
    among the outputs."""
    name = f"test_export_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(
        "from autograder.export.outputs import Export, Output\n"
        f"EXPORT = Export('{name}', (Output('LMS', '{name}.csv', '', 'for an LMS'),), print, order=45)\n")
    monkeypatch.setattr(export, "__path__", [*export.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, f"autograder.export.{name}", raising=False)
    assert name in {e.name for e in export.found()}
    assert {e.name for e in export.found()} >= {"parts", "totals", "gradescope", "LMS"}
    assert set(export.found()) - set(pipeline.EXPORTS) == {sys.modules[f"autograder.export.{name}"].EXPORT}
    assert [e.order for e in pipeline.EXPORTS] == sorted(e.order for e in pipeline.EXPORTS)
    assert {o for e in pipeline.EXPORTS for o in e.outputs} <= set(pipeline.OUTPUTS)


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

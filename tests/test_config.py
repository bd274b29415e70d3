"""course.yaml is validated when loaded: each mistake stops with one line naming file and key."""

import os
import pathlib
import shutil

import pytest
import yaml

from autograder.course import config
from autograder.course.late_rules import Grace, LatePolicy, PerStartedDay, ZeroAfter


@pytest.fixture
def course_copy(tmp_path):
    """A copy of the course files small enough to edit: course.yaml, solutions/, parts/."""
    for name in ("solutions", "parts"):
        shutil.copytree(f"{config.ROOT}/{name}", tmp_path / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(f"{config.ROOT}/course.yaml", tmp_path / "course.yaml")
    return tmp_path


def edit(root, change):
    path = root / "course.yaml"
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data))
    return path


TLS = {"ca": "ca.pem", "cert": "client.pem", "key": "client-key.pem"}


def first_assignment(data):
    return next(iter(data["assignments"].values()))


def first_part(data):
    assignment = next(iter(data["assignments"].values()))
    return assignment, next(iter(assignment["parts"].values()))


def test_the_course_loads(course):
    assert [p.id for a in course.assignments for p in a.parts] == [
        "softmax", "causal_mask", "qkv_projections", "parameter_count", "projection_removal"]


@pytest.mark.parametrize("change, words", [
    (lambda d: first_part(d)[1].__setitem__("points", -2), ["points", "must be >= 0", "-2"]),
    (lambda d: next(iter(d["assignments"].values()))["parts"].__setitem__("attention_heads", {"points": 1, "cells": [], "tests": "x"}),
     ["attention_heads", "no test cell 'check_attention_heads'"]),
    (lambda d: next(iter(d["assignments"].values()))["parts"].__setitem__("Heads-2", {"points": 1, "cells": [], "tests": "x"}),
     ["Heads-2", "lower-case letters"]),
    (lambda d: next(iter(d["assignments"].values())).__setitem__("notebook", "nowhere.ipynb"),
     ["notebook", "nowhere.ipynb", "does not exist"]),
    (lambda d: d["limits"].__setitem__("wall_time", 3), ["limits.wall_time", "unknown key"]),
    (lambda d: first_part(d)[1].__setitem__("cells", ["no_such_cell"]), ["cells", "no_such_cell"]),
    (lambda d: first_part(d)[1].__setitem__("tests", "parts/softmax/nothing.py"), ["tests", "does not exist"]),
    (lambda d: d["limits"].__setitem__("memory_mb", "lots"), ["memory_mb", "must be a number"]),
    (lambda d: d.__setitem__("similarity_threshold", 1.5), ["similarity_threshold", "at most 1", "1.5"]),
    (lambda d: d.__setitem__("similarity_threshold", "high"), ["similarity_threshold", "must be a number"]),
    (lambda d: d.update(cluster="tcp://grader:8786", cluster_tls=TLS),
     ["cluster", "tcp://grader:8786", "is not a tls:// address", "anyone who reaches"]),
    (lambda d: d.update(cluster="tls://grader:8786"), ["cluster", "needs cluster_tls", "course cluster --certs"]),
    (lambda d: d.update(cluster_tls={"ca": "ca.pem", "cert": "client.pem"}), ["cluster_tls.key", "missing"]),
    (lambda d: d.update(cluster_tls=dict(TLS, ca=3)), ["cluster_tls.ca", "must be a file's path", "3"]),
    (lambda d: d.update(cluster_tls=dict(TLS, password="x")), ["cluster_tls.password", "unknown key"]),
    (lambda d: first_assignment(d).__setitem__("due", "next friday"), ["attention.due", "must be a date and time"]),
    (lambda d: first_assignment(d).__setitem__("due", "2026-12-08T23:59:00"), ["attention.due", "no UTC offset"]),
    (lambda d: d.update(late={"penalty_per_day": 10}), ["late.penalty_per_day", "at most 1", "10"]),
    (lambda d: d.update(late={"per_day": 0.1}), ["late.per_day", "unknown key"]),
    (lambda d: d.update(late={"grace_minutes": -5}), ["late.grace_minutes", "must be >= 0"]),
    (lambda d: d.update(late={"zero_after_days": 0}), ["late.zero_after_days", "must be > 0"]),
    (lambda d: d.update(extensions={"alice": {"attention": "2026-12-10T23:59:00+00:00"}}),
     ["extensions.alice.attention", "attention has no due: date"]),
    (lambda d: (first_assignment(d).__setitem__("due", "2026-12-08T23:59:00+00:00"),
                d.update(extensions={"alice": {"attention": "2026-12-01T23:59:00+00:00"}})),
     ["extensions.alice.attention", "is before attention's due date"]),
    (lambda d: d.update(extensions={"alice": {"atention": "2026-12-10T23:59:00+00:00"}}),
     ["extensions.alice.atention", "unknown key"]),
])
def test_each_mistake_is_one_clear_line(course_copy, change, words):
    path = edit(course_copy, change)
    with pytest.raises(config.ConfigError) as info:
        config.load(str(path))
    message = str(info.value)
    assert "\n" not in message and "course.yaml" in message
    for word in words:
        assert word in message


def test_the_limits_load_as_one_record(course):
    """course.yaml's limits become one record, each of its field's type, that grading, the
    student's kit and the versions of results all take whole."""
    from selfcheck.limits import Limits
    with open(course.path) as fh:
        raw = yaml.safe_load(fh)["limits"]
    assert course.limits == Limits(**raw)
    assert [type(getattr(course.limits, key)) for key in raw] == [float, float, int]


def test_bad_yaml_names_the_line(course_copy):
    path = course_copy / "course.yaml"
    path.write_text("course_id: x\nlimits: [unclosed\n")
    with pytest.raises(config.ConfigError, match=r"course.yaml: not valid YAML at line \d"):
        config.load(str(path))


def test_the_cli_reports_a_config_error_and_exits_2(course_copy, capsys):
    from autograder import cli
    path = edit(course_copy, lambda d: d["limits"].__setitem__("time_per_test", 0))
    assert cli.main(["--config", str(path), "release"]) == 2
    assert "time_per_test: must be > 0" in capsys.readouterr().err


def test_a_folder_with_its_own_course_is_never_worked_on_as_another(course_copy, capsys, monkeypatch):
    """`course exchange --setup` in a second clone with the first clone's `course` would rewrite the
    first's course.yaml and bind this folder's nbgrader to it: it stops, naming both, and changes nothing."""
    from autograder import cli
    before = {p: p.read_bytes() for p in (course_copy / "course.yaml", pathlib.Path(config.ROOT, "course.yaml"))}
    monkeypatch.chdir(course_copy)
    assert cli.main(["exchange", "--setup", "--root", str(course_copy / "elsewhere")]) == 2
    err = capsys.readouterr().err
    assert f"{course_copy} holds its own course.yaml" in err and f"--config {course_copy}/course.yaml" in err
    assert {p: p.read_bytes() for p in before} == before and not (course_copy / "elsewhere").exists()
    assert not (course_copy / "nbgrader_config.py").exists()


def test_cluster_and_gradebook_url_are_optional_and_checked(course_copy, monkeypatch):
    course = config.load(str(course_copy / "course.yaml"))
    assert course.cluster is None and course.cluster_tls is None and course.db_url is None
    monkeypatch.setenv("GRADEBOOK_PASSWORD", "s3cret")
    monkeypatch.setenv("CLUSTER_CERTS", "/etc/attention-cluster")
    course = config.load(str(edit(course_copy, lambda d: d.update(
        cluster="tls://grader:8786", cluster_tls={"ca": "${CLUSTER_CERTS}/ca.pem", "cert": "certs/client.pem",
                                                  "key": "~/client-key.pem"},
        db_url="postgresql+psycopg2://grader:${GRADEBOOK_PASSWORD}@db/attention"))))
    assert course.cluster == "tls://grader:8786"
    assert course.cluster_tls == config.ClusterTLS("/etc/attention-cluster/ca.pem",
                                                   str(course_copy / "certs" / "client.pem"),
                                                   os.path.expanduser("~/client-key.pem"))
    assert course.db_url == "postgresql+psycopg2://grader:s3cret@db/attention"
    with pytest.raises(config.ConfigError, match=r"cluster: must be a Dask scheduler's address"):
        config.load(str(edit(course_copy, lambda d: d.update(cluster=8786))))


def test_a_plain_tcp_cluster_stops_grading_with_one_line_before_anything(tmp_path, capsys):
    from autograder import cli
    out = tmp_path / "out"
    assert cli.main(["grade", str(tmp_path), "--out", str(out), "--cluster", "tcp://127.0.0.1:8786"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "--cluster: tcp://127.0.0.1:8786 is not a tls:// address" in captured.err
    assert "start the scheduler and workers with TLS" in captured.err
    assert not out.exists()


def test_the_clusters_keys_are_never_made_inside_the_course(capsys):
    from autograder import cli
    inside = os.path.join(config.ROOT, "data", "cluster-certs")
    assert cli.main(["cluster", "--certs", inside]) == 2
    assert "inside the course folder, where `git add -A` would commit the keys" in capsys.readouterr().err
    assert not os.path.exists(inside)


def test_due_dates_late_policy_and_extensions_load_in_utc(course_copy):
    def change(data):
        first_assignment(data)["due"] = "2026-12-09T00:59:00+01:00"
        data["late"] = {"grace_minutes": 15, "penalty_per_day": 0.1, "max_penalty": 0.5, "zero_after_days": 7}
        data["extensions"] = {"alice": {"attention": "2026-12-10T23:59:00+00:00"}}
    course = config.load(str(edit(course_copy, change)))
    assert course.assignments[0].due.isoformat() == "2026-12-08T23:59:00"
    assert course.assignments[1].due is None
    assert course.late == LatePolicy((PerStartedDay(penalty_per_day=0.1, max_penalty=0.5),
                                      ZeroAfter(zero_after_days=7), Grace(grace_minutes=15)))
    assert course.extensions["alice"]["attention"].isoformat() == "2026-12-10T23:59:00"
    assert config.load().late is None and config.load().extensions == {}


@pytest.mark.parametrize("text, shown", [
    ("2026-13-08T23:59:00+00:00", "got '2026-13-08T23:59:00+00:00' (month must be in 1..12)"),
    ("2026-12-08T25:59:00+00:00", "got '2026-12-08T25:59:00+00:00' (hour must be in 0..23)"),
    ("2026-12-08 25:59", "got '2026-12-08 25:59' (hour must be in 0..23)"),
    ("next friday", "got 'next friday'"),
    ("2026-12-08", "got '2026-12-08' (a day with no time of day)"),
])
def test_a_due_date_that_is_no_time_is_one_line_naming_the_key_and_showing_the_text(course_copy, capsys,
                                                                                    text, shown):
    """Written unquoted, as an instructor types it: YAML makes a time of some of these and raises
    on others; each is one line naming the key and showing what was written."""
    from autograder import cli
    path = course_copy / "course.yaml"
    raw = path.read_text()
    first = next(iter(yaml.safe_load(raw)["assignments"]))
    path.write_text(raw.replace(f"\n  {first}:\n", f"\n  {first}:\n    due: {text}\n", 1))
    assert cli.main(["--config", str(path), "release"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"assignments.{first}.due: must be a date and time" in err, err
    assert err.rstrip().endswith(shown), err
    path.write_text(raw.replace(f"\n  {first}:\n", f"\n  {first}:\n    due: 2026-12-01T00:00:00+00:00\n", 1)
                    + f"extensions:\n  alice:\n    {first}: {text}\n")
    assert cli.main(["--config", str(path), "release"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"extensions.alice.{first}: must be a date and time" in err, err
    assert err.rstrip().endswith(shown), err

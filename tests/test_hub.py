"""The course on a real JupyterHub (deploy/jupyterhub_config.py), driven in Chromium.

As root, the test makes the course's Unix groups and accounts with passwords (two students, a TA,
the grading account, who owns the private course folder and opens the exchange), starts the hub on
127.0.0.1, formgrader on a Unix socket behind a port below 1024, and each server on a domain of its
own below hub.localhost, and goes through a term in the browser: each student logs in with PAM,
fetches `attention` in the Assignments tab, writes the reference solution (one of them half of it),
runs a check cell, presses Validate and submits (a hand-in theirs and the grading account's alone);
a student is refused at formgrader; the TA opens
formgrader through the hub's Services menu, where a student's page in the same browser can call none
of it, collects, autogrades (as the grading account: the same scores as `course grade`), grades a
written answer and releases feedback; each student fetches their own, and "(view feedback)" opens
it; a student fetches weighted_attention and loads the corpus the hub shares; the TA, taken out of
the group, loses formgrader's link; and with formgrader down, a student's account cannot take its
place. Each user's server listens on no TCP port; a student who subscribes to every TCP port of a
classmate's processes while the classmate works and Validates receives nothing of their kernels
(over ipc, in a folder of the classmate's alone); and once the classmate's server is killed, the
student can neither bind its port while the hub routes there nor receive the classmate's requests.
A home left open to other accounts is closed before its server starts; and the README's own account
lines make homes no classmate enters. The hub is stopped and the accounts and groups removed
whatever happens. Screenshots of each step are left in artifacts/hub/.
"""

import contextlib
import errno
import glob
import http.client
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
import urllib.parse

import pytest
import yaml

from autograder import pipeline
from autograder.course import config, corpus
from autograder.hub import code_copy
from autograder.mistakes import cohort
from selfcheck.program import grade_id
from test_accounts import accounts, passwd_held, python_shown, userdel  # noqa: F401 - accounts is a fixture
from test_browser import (LAB_SETTINGS, _assignment_list, _cells, _hand_grade, _index, _run,  # noqa: F401
                          _score_cells, _shot, _validate, browser)

pytestmark = pytest.mark.slow

BIN = os.path.dirname(sys.executable)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUB_CONFIG = os.path.join(ROOT, "deploy", "jupyterhub_config.py")
README = os.path.join(ROOT, "docs", "tutorials", "jupyterhub.md")   # the hub tutorial
SHOTS = os.path.join(ROOT, "artifacts", "hub")
REFRESH = 2          # seconds between the hub's reads of an account's groups (five minutes by default)
DOMAIN = "hub.localhost"  # Chromium finds every name below localhost on this machine, as wildcard DNS would
COMMENT = "Right: the query lines up with one key far more than with the others."


def _free_port(low=False, taken=()):
    """A free port on 127.0.0.1; ``low``, one below 1024, which only root can bind (as the test runs)."""
    for port in range(900, 1000) if low else [0]:
        with socket.socket() as s, contextlib.suppress(OSError):
            if port not in taken:
                s.bind(("127.0.0.1", port))
                return s.getsockname()[1]
    raise RuntimeError("no free port below 1024")


def _answer(port, url):
    """The status and Location header of a GET of ``url``, sent to the proxy on 127.0.0.1:``port``
    (its name needs no DNS), redirects not followed: (None, "") when nothing answers."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=5,
                                             context=ssl._create_unverified_context())
    try:
        connection.request("GET", parts.path, headers={"Host": parts.netloc})
        response = connection.getresponse()
        return response.status, response.getheader("Location", "")
    except OSError:
        return None, ""
    finally:
        connection.close()


def _wildcard_certificate(folder):
    """The hub's options for a certificate of its own for DOMAIN and *.DOMAIN, made in ``folder``."""
    cert, key = os.path.join(folder, "hub.pem"), os.path.join(folder, "hub.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", key,
                    "-out", cert, "-subj", f"/CN={DOMAIN}", "-addext", f"subjectAltName=DNS:{DOMAIN},DNS:*.{DOMAIN}"],
                   check=True, capture_output=True)
    return [f"--JupyterHub.ssl_cert={cert}", f"--JupyterHub.ssl_key={key}"]


class Hub:
    """The hub on 127.0.0.1:``port``, as browsers reach it: its own pages on hub.localhost, each
    user's server on <name>.hub.localhost and formgrader on <course_id>--service.hub.localhost."""

    def __init__(self, port, course, grader, password, log, sockets):
        self.port, self.course, self.grader, self.password, self.log = port, course, grader, password, log
        self.url = f"https://{DOMAIN}:{port}"
        self.formgrader = f"https://{course.course_id}--service.{DOMAIN}:{port}/services/{course.course_id}"
        self.formgrader_socket = os.path.join(sockets, "formgrader", "formgrader.sock")

    def home(self, name):
        return pwd.getpwnam(name).pw_dir

    def server(self, name):
        return f"https://{name}.{DOMAIN}:{self.port}/user/{name}"


@contextlib.contextmanager
def _course_groups(course_id):
    groups = [f"nbgrader-{course_id}", f"formgrade-{course_id}"]
    try:
        with passwd_held():
            for group in groups:
                subprocess.run(["groupadd", group], check=True, capture_output=True)
        yield groups
    finally:
        with passwd_held():
            for group in groups:
                subprocess.run(["groupdel", group], capture_output=True)


@pytest.fixture
def hub(copy_course, accounts, chromium):  # noqa: F811 - accounts is test_accounts' fixture
    """The hub running, with `attention` released: a Hub. Its students are in ``hub.students``."""
    if not (shutil.which("chpasswd") and shutil.which("groupadd")):
        pytest.skip("chpasswd and groupadd (passwd) are needed to make the accounts")
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make the hub's certificate")
    pytest.importorskip("jupyterhub", reason="JupyterHub is the `hub` extra: `make test` installs it")
    if not os.access(os.path.join(BIN, "configurable-http-proxy"), os.X_OK):
        pytest.skip("configurable-http-proxy is not installed: `make test` installs it with npm")
    folder = accounts.folder
    course_id = f"attention-{accounts.tag}"
    root = os.path.join(folder, "course")
    try:
        found = corpus.find(config.load(), download=False)
    except corpus.CorpusError as exc:
        pytest.skip(f"needs the corpus: {exc}")
    copy_course(root)
    shutil.copytree(os.path.join(ROOT, "deploy"), os.path.join(root, "deploy"))   # as in a clone: private too
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    shutil.copy(found, os.path.join(root, "data", corpus.NAME))                # the README's step 2
    with open(os.path.join(root, "course.yaml")) as fh:
        raw = yaml.safe_load(fh)
    # attention for the term, and weighted_attention, which trains on the corpus (a release of the
    # three takes half as long again)
    raw["assignments"] = {a: raw["assignments"][a] for a in ("attention", "weighted_attention")}
    raw["course_id"] = course_id
    with open(os.path.join(root, "course.yaml"), "w") as fh:
        yaml.safe_dump(raw, fh, sort_keys=False)

    with _course_groups(course_id) as (students_group, graders_group):
        grader = accounts.add("grader")
        students = [accounts.add(s) for s in ("ada", "bob")]
        ta = accounts.add("tia")
        password = secrets.token_urlsafe(12)
        with passwd_held():
            subprocess.run(["chpasswd"], input="".join(f"{n}:{password}\n" for n in students + [ta]),
                           text=True, check=True)
            for name, group in [(s, students_group) for s in students] + [(ta, graders_group)]:
                subprocess.run(["usermod", "-aG", group, name], check=True)
        for name in students + [ta]:
            _quiet_lab(pwd.getpwnam(name))
        os.chmod(pwd.getpwnam(students[1]).pw_dir, 0o755)     # as `useradd -m` leaves it on Debian
        # the course folder is the grading account's alone; the exchange is opened by it
        entry = pwd.getpwnam(grader)
        exchange = os.path.join(folder, "exchange")
        os.makedirs(exchange)
        for path in [exchange] + [os.path.join(d, f) for d, dirs, files in os.walk(root) for f in dirs + files] + [root]:
            os.lchown(path, entry.pw_uid, entry.pw_gid)
        os.chmod(root, 0o700)
        yaml_path = os.path.join(root, "course.yaml")
        course_cmd = [os.path.join(BIN, "course"), "--config", yaml_path]
        accounts.run(grader, course_cmd + ["release"], cwd=root)      # the gradebook learns the assignment
        accounts.run(grader, course_cmd + ["exchange", root, "--setup", "--root", exchange], cwd=root)
        for released in ("attention", "weighted_attention"):
            accounts.run(grader, [os.path.join(BIN, "nbgrader"), "release_assignment", released], cwd=root)

        state = os.path.join(folder, "hub")
        os.makedirs(state)
        port, hub_api = _free_port(), _free_port(low=True)
        formgrader_port = _free_port(low=True, taken=[hub_api])
        sockets = os.path.join(folder, "run")
        env = {"PATH": BIN + os.pathsep + "/usr/bin:/bin", "LANG": "C.UTF-8", "COURSE_YAML": yaml_path,
               "COURSE_GRADER": grader, "COURSE_HUB_SOCKETS": sockets,
               "COURSE_FORMGRADER_PORT": str(formgrader_port), "COURSE_HUB_SUBDOMAIN_HOST": f"https://{DOMAIN}:{port}"}
        # root's copy of the code the hub runs, as `make hub` makes it (the course folder is the grader's)
        code = code_copy.make(os.path.join(state, "code"), course_root=root)
        cmd = [os.path.join(BIN, "jupyterhub"), "-f", os.path.join(code, "deploy", "jupyterhub_config.py"),
               f"--JupyterHub.bind_url=https://127.0.0.1:{port}", f"--JupyterHub.hub_bind_url=http://127.0.0.1:{hub_api}",
               f"--Authenticator.auth_refresh_age={REFRESH}", "--Spawner.http_timeout=120",  # busy cores start labs slowly
               *_wildcard_certificate(state)]
        log_path = os.path.join(state, "jupyterhub.log")
        # the proxy's socket as a killed hub leaves it: this hub starts all the same
        os.makedirs(os.path.join(sockets, "proxy"))
        os.chmod(sockets, 0o755)
        with socket.socket(socket.AF_UNIX) as left:
            left.bind(os.path.join(sockets, "proxy", "api.sock"))
        with python_shown() as show, open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    preexec_fn=show)
            made = Hub(port, config.load(yaml_path), grader, password, log_path, sockets)
            made.students, made.ta, made.accounts = students, ta, accounts
            made.formgrader_port, made.hub_api, made.state, made.sockets = formgrader_port, hub_api, state, sockets
            try:
                deadline = time.monotonic() + 120
                # up when the proxy routes the service to its server, which sends a stranger to log in
                while "/hub/api/oauth2/authorize" not in _answer(port, f"{made.formgrader}/formgrader")[1]:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"the hub did not start:\n{open(log_path).read()[-4000:]}")
                    time.sleep(0.5)
                yield made
            finally:
                proc.terminate()         # the hub stops the servers it spawned, the service and the proxy
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                os.makedirs(SHOTS, exist_ok=True)
                shutil.copy(log_path, SHOTS)      # the hub's log, its servers' and the service's


def test_the_hub_will_not_start_servers_no_account_can_run(tmp_path):
    """Started from an environment other accounts cannot enter (here Python is under /root, 0700),
    the hub stops at once, saying where, instead of failing at each student's first login."""
    pytest.importorskip("jupyterhub", reason="JupyterHub is the `hub` extra: `make test` installs it")
    parts = os.path.realpath(sys.executable).split(os.sep)
    if all(os.stat(os.sep.join(parts[:i])).st_mode & 0o001 for i in range(2, len(parts) + 1)):
        pytest.skip(f"Python here ({sys.base_prefix}) is reachable by every account")
    done = subprocess.run([os.path.join(BIN, "jupyterhub"), "-f", HUB_CONFIG], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    found = re.search(r"error: (\S+) is not reachable by other accounts \((\S+) is closed to them\)", done.stderr)
    assert done.returncode != 0 and found, done.stderr[-2000:]
    assert found[1] == sys.executable and not os.stat(found[2]).st_mode & 0o001
    assert not os.listdir(tmp_path)               # no database, no cookie secret, no proxy started


def _readme_account_lines():
    """The commands of the hub tutorial's step "The accounts" (docs/tutorials/jupyterhub.md)."""
    with open(README) as fh:
        section = fh.read().split("## 1. The accounts", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S)[1]
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_the_readmes_accounts_keep_each_home_from_classmates(accounts):  # noqa: F811
    """The README's account lines, run as written (names of the test's own, a second student made
    as the first, passwords left out), make homes where a classmate lists and reads nothing: not
    the notebooks, not the submission secret that names the feedback page."""
    lines = _readme_account_lines()
    assert any(line.startswith("useradd") for line in lines), lines
    course_id, tag = f"attention-{accounts.tag}", accounts.tag
    names = {"alice": f"cs{tag}ann", "bob": f"cs{tag}bob", "tom": f"cs{tag}tim"}
    commands = []
    for line in lines:
        line = re.sub(r"\s*&&\s*passwd \S+", "", line).replace("attention-transformer", course_id)
        commands.append(line)
        if re.search(r"\balice\b", line):
            commands.append(re.sub(r"\balice\b", "bob", line))      # a classmate, made the same way
    commands = [re.sub(r"\b(alice|bob|tom)\b", lambda m: names[m[1]], c) for c in commands]
    names["grader"] = f"grader-{course_id}"
    try:
        with passwd_held():
            for command in commands:
                subprocess.run(command, shell=True, check=True, capture_output=True)
        ann, bob = pwd.getpwnam(names["alice"]), names["bob"]
        cache = os.path.join(ann.pw_dir, ".local", "share", "jupyter", "nbgrader_cache", course_id,
                             f"{ann.pw_name}+attention+2026-12-01 10:00:00.000000 UTC")
        work = os.path.join(ann.pw_dir, "attention", "attention.ipynb")
        accounts.run(ann.pw_name, ["sh", "-c", f"umask 022 && mkdir -p '{cache}' '{os.path.dirname(work)}' && "
                                               f"echo s3cret > '{cache}/submission_secret.txt' && echo {{}} > '{work}'"])
        seen = accounts.probe(bob, ann.pw_dir, os.path.join(cache, "submission_secret.txt"), work)
        assert not any(v for probe in seen.values() for v in probe.values()), seen
        assert stat.S_IMODE(os.stat(ann.pw_dir).st_mode) == 0o700
        assert accounts.probe(ann.pw_name, work)[work]["read"]          # she still reads her own
    finally:
        with passwd_held():
            left = {name: said for name in names.values() if (said := userdel(name, "-r")) is not None}
            for group in (f"nbgrader-{course_id}", f"formgrade-{course_id}"):
                subprocess.run(["groupdel", group], capture_output=True)
        assert not left, f"accounts the test made are still there: {left}"


def _quiet_lab(entry):
    """The lab settings of a quiet, predictable screen in an account's own settings folder."""
    settings = os.path.join(entry.pw_dir, ".jupyter", "lab", "user-settings")
    for name, values in LAB_SETTINGS.items():
        os.makedirs(os.path.dirname(os.path.join(settings, name)), exist_ok=True)
        with open(os.path.join(settings, name), "w") as fh:
            json.dump(values, fh)
    for folder, dirs, files in os.walk(os.path.join(entry.pw_dir, ".jupyter")):
        for name in [folder] + [os.path.join(folder, n) for n in dirs + files]:
            os.lchown(name, entry.pw_uid, entry.pw_gid)


def _log_in(browser, hub, name):  # noqa: F811 - browser is test_browser's fixture
    """A browser of its own for ``name``, logged in with its password; the page once the lab is up."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, ignore_https_errors=True)
    context.set_default_timeout(30_000)
    page = context.new_page()
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", hub.password)
    page.click("#login_submit")
    page.wait_for_selector("#jp-main-dock-panel", timeout=120_000)     # spawned, and the lab loaded
    return page


def _write_answer(page, index, text):
    """Type ``text`` over a markdown answer cell, as a student would, and render it."""
    cell = _cells(page).nth(index)
    cell.locator(".jp-MarkdownOutput").dblclick()          # a rendered markdown cell opens its editor
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)
    page.keyboard.press("Shift+Enter")
    cell.locator(".jp-MarkdownOutput", has_text=text.split()[0]).wait_for()


def _formgrader_action(page, link):
    """Click a formgrader action and wait for its dialog: the text of its success dialog, closed."""
    link.click()
    modal = page.locator("#success-modal, #error-modal")
    modal.wait_for(timeout=300_000)
    text = modal.inner_text()
    assert modal.get_attribute("id") == "success-modal", text
    return text


def _close_modal(page):
    page.locator("#success-modal .modal-footer button").click()
    page.locator("#success-modal").wait_for(state="detached")


def test_a_term_on_the_hub(hub, browser):  # noqa: F811 - browser is test_browser's fixture
    course = hub.course
    assignment = course.assignment("attention")
    solved = cohort.solved(course, assignment)
    code = {grade_id(c): "".join(c["source"]) for c in solved["cells"]}
    ada, bob = hub.students
    # ada writes every part, bob only softmax; both answer the written questions
    written = {ada: assignment.parts, bob: assignment.parts[:1]}
    pages, overhearing = {}, contextlib.ExitStack()
    for n, name in enumerate(hub.students, 1):
        page = pages[name] = _log_in(browser, hub, name)
        assert stat.S_IMODE(os.stat(hub.home(name)).st_mode) == 0o700, name    # closed before the spawn
        assert _origin(page) == _origin(hub.server(name)), page.url           # a domain of their own
        server = _processes(pwd.getpwnam(name).pw_uid, "jupyterhub-singleuser")
        assert server and not any(_tcp_ports(pid) for pid in server), name    # a Unix socket of its own
        menu = _nbgrader_menu(page)
        assert menu == ["Assignment List"], menu
        assert not page.get_by_text("Create Assignment").count()
        released = _assignment_list(page)
        released.locator(".list_item", has=_named(page, "attention")).get_by_role("button", name="Fetch").click()
        page.locator("#fetched_assignments_list .list_item", has_text="attention").first.wait_for()
        _shot(page, f"student{n}-1-fetched", SHOTS)
        home = hub.home(name)
        assert os.stat(os.path.join(home, "attention", "attention.ipynb")).st_uid == pwd.getpwnam(name).pw_uid

        page.goto(f"{hub.server(name)}/lab/tree/attention/attention.ipynb")
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
        page.keyboard.press("Control+B")
        if name == bob:         # ada listens in on bob's kernels as he works, and Validates
            listener = overhearing.enter_context(hub.accounts.started(ada, [
                sys.executable, "-c", OVERHEAR, str(pwd.getpwnam(bob).pw_uid), _runtime_folder(hub, bob)]))
            assert json.loads(listener.stdout.readline()) == {"listed": False}
        _run(page, _index(solved, "imports"))
        for part in written[name]:
            for gid in part.cells:
                _run(page, _index(solved, gid), code[gid])
        for gid in assignment.written:
            _write_answer(page, _index(solved, gid), code[gid])
        # no debugger: it would have the kernel listen for one on a TCP port of 127.0.0.1
        assert not page.locator(".jp-DebuggerBugButton").count()
        check = _index(solved, "check_softmax")
        output = _run(page, check)
        _cells(page).nth(check).scroll_into_view_if_needed()
        _shot(page, f"student{n}-2-check", SHOTS)
        assert "public checks pass" in output and "FAIL" not in output, output
        page.keyboard.press("Control+S")
        page.locator(".jp-mod-dirty").wait_for(state="detached")
        dialog = _validate(page)
        _shot(page, f"student{n}-3-validate", SHOTS)
        text = dialog.inner_text()
        if name == ada:
            assert "Success! Your notebook passes all the tests." in text, text
        else:
            assert "SelfCheckFailed: causal_mask: " in text and "softmax: " not in text, text
            _nothing_overheard(hub, listener, bob)
            overhearing.close()
        page.keyboard.press("Escape")
        _assignment_list(page)
        fetched = page.locator("#fetched_assignments_list .list_item", has_text="attention").first
        fetched.get_by_role("button", name="Submit").click()
        page.locator("#submitted_assignments_list .list_item", has_text="attention").first.wait_for()
        _shot(page, f"student{n}-4-submitted", SHOTS)
        # the hand-in is the student's and the grading account's alone: no classmate who learns its
        # name reads it, adds to it or changes its time
        handed_in = glob.glob(os.path.join(glob.escape(course.exchange_root), course.course_id, "inbound", f"{name}+*"))
        assert handed_in and all(stat.S_IMODE(os.stat(p).st_mode) == 0o770 and os.stat(p).st_gid ==
                                 pwd.getpwnam(hub.grader).pw_gid for p in handed_in), handed_in

    # a student is no grader: formgrader's service refuses them
    response = pages[bob].goto(f"{hub.formgrader}/formgrader")
    _shot(pages[bob], "student2-5-formgrader-refused", SHOTS)
    assert response.status == 403, (response.status, response.url)

    ta = _log_in(browser, hub, hub.ta)
    # formgrader is the service's, not in their lab; Create Assignment is (the menu and the right sidebar)
    assert _nbgrader_menu(ta) == ["Assignment List", "Create assignment"]
    ta.get_by_text("Create Assignment", exact=True).wait_for()   # the tab, not the menu item
    _shot(ta, "ta-1-lab", SHOTS)
    ta.goto(f"{hub.url}/hub/home")
    ta.get_by_role("button", name="Services").click()
    link = urllib.parse.urlsplit(ta.get_by_role("link", name=course.course_id).get_attribute("href"))
    # JupyterHub's link leaves out a port (none on a hub at 443, as the README's); the test's has one
    assert link.hostname == urllib.parse.urlsplit(hub.formgrader).hostname, link
    assert link.path == f"/services/{course.course_id}/", link
    ta.goto(f"{hub.formgrader}/")
    ta.locator("#main-table").wait_for()
    _shot(ta, "ta-2-formgrader", SHOTS)
    # formgrader's origin is its own, and a student's page in the TA's browser reads nothing of it
    assert _origin(ta) == _origin(hub.formgrader) != _origin(hub.url)
    _scripted_from_a_students_page(ta, hub, ada)
    row = ta.locator("#main-table tr", has=_named(ta, "attention"))
    _formgrader_action(ta, row.locator(".collect a"))
    _shot(ta, "ta-3-collected", SHOTS)
    _close_modal(ta)
    ta.goto(f"{hub.formgrader}/formgrader/manage_submissions/attention")
    for name in hub.students:
        ta.locator("#main-table tr", has_text=name).locator(".autograde a").wait_for()
        _formgrader_action(ta, ta.locator("#main-table tr", has_text=name).locator(".autograde a"))
        _close_modal(ta)
    shown = _score_cells(ta, hub.formgrader, "attention")
    _shot(ta, "ta-4-autograded", SHOTS)
    grader_uid = pwd.getpwnam(hub.grader).pw_uid
    for name in hub.students:              # graded by the service, as the grading account
        assert os.stat(os.path.join(course.root, "results", name, "attention.json")).st_uid == grader_uid

    # the course's grader from the command line, on the same hand-ins, in a folder of its own
    elsewhere = os.path.join(os.path.dirname(course.root), "graded-again")
    os.mkdir(elsewhere, 0o700)          # a grading folder is its grader's alone
    shutil.copytree(os.path.join(course.root, "submitted"), os.path.join(elsewhere, "submitted"), dirs_exist_ok=True)
    batch = pipeline.grade(course, os.path.join(elsewhere, "submitted"), elsewhere, jobs=2)
    full = sum(p.points for p in assignment.parts)
    top = full + sum(assignment.written.values())
    assert {r.student: r.score for r in batch.records} == {ada: full, bob: assignment.parts[0].points}
    assert {s: tuple(float(x) for x in v.split("/")) for s, v in shown.items()} == \
        {r.student: (r.score, top) for r in batch.records}

    cell, points = next(iter(assignment.written.items()))
    _hand_grade(ta, hub.formgrader, ada, "attention", cell, points, COMMENT)
    _shot(ta, "ta-5-hand-grade", SHOTS)
    ta.goto(f"{hub.formgrader}/formgrader")
    row = ta.locator("#main-table tr", has=_named(ta, "attention"))
    for action, step in (("generate-feedback", "ta-6-feedback-generated"), ("release-feedback", "ta-7-feedback-released")):
        _formgrader_action(ta, row.locator(f".{action} a"))
        _shot(ta, step, SHOTS)
        _close_modal(ta)

    for n, name in enumerate(hub.students, 1):
        page = pages[name]
        page.goto(f"{hub.server(name)}/lab")
        page.wait_for_selector("#jp-main-dock-panel")
        _assignment_list(page)
        item = page.locator("#submitted_assignments_list .list_item", has_text="attention").first
        item.get_by_role("button", name="Fetch Feedback").click()
        page.get_by_text("(view feedback)").first.wait_for()
        _shot(page, f"student{n}-6-feedback", SHOTS)
        page.get_by_text("(view feedback)").first.click()       # opens the page, not only its folder
        shown = page.frame_locator(".jp-HTMLViewer iframe").locator("body")
        shown.get_by_text(f"{assignment.parts[0].id}: ").first.wait_for()
        _shot(page, f"student{n}-6-feedback-page", SHOTS)
        earned = assignment.parts[0].points
        assert f"{assignment.parts[0].id}: {earned:g} / {earned:g}" in shown.inner_text()
        found = glob.glob(os.path.join(hub.home(name), "attention", "feedback", "*", "*.html"))
        assert len(found) == 1, found           # their own, and only theirs
        text = open(found[0]).read()
        for part in assignment.parts:
            earned = part.points if part in written[name] else 0
            assert f"{part.id}: {earned:g} / {part.points:g}" in text, (name, part.id)
        assert (COMMENT in text) == (name == ada), name
    _trains_on_the_corpus(hub, pages[ada], ada)

    # a TA taken out of the group loses formgrader at the hub's next read of the groups
    with passwd_held():
        subprocess.run(["gpasswd", "-d", hub.ta, f"formgrade-{course.course_id}"], check=True, capture_output=True)
    time.sleep(REFRESH + 1)
    ta.goto(f"{hub.url}/hub/home")
    _shot(ta, "ta-8-removed", SHOTS)
    assert not ta.get_by_role("button", name="Services").count()

    _formgrader_down(hub, ta, bob)
    _dead_servers_port(hub, pages[bob], ada, bob)
    _links_own_socket(hub, ada)


def _named(page, name):
    """The cell or name of a list that says ``name`` and nothing else (attention, not weighted_attention)."""
    return page.locator("td, .item_name", has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))


def _nbgrader_menu(page):
    """The items of the lab's Nbgrader menu (closed again)."""
    page.get_by_role("menuitem", name="Nbgrader").click()
    items = [t.strip() for t in page.locator(".lm-Menu-content .lm-Menu-itemLabel").all_inner_texts() if t.strip()]
    page.keyboard.press("Escape")
    page.locator(".lm-Menu").first.wait_for(state="detached")   # closed: the next click on Nbgrader opens it
    return items


def _origin(page_or_url):
    """The origin of a page (as its scripts see it) or of a URL."""
    if isinstance(page_or_url, str):
        parts = urllib.parse.urlsplit(page_or_url)
        return f"{parts.scheme}://{parts.netloc}"
    return page_or_url.evaluate("location.origin")


# What a script of a student's page tries in a TA's browser: formgrader's API with the TA's cookies
# (and the XSRF token, where it can read one)
CALL_FORMGRADER = """async (api) => {
    const seen = {origin: location.origin, cookies: document.cookie};
    const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1];
    try {
        const response = await fetch(api, {credentials: "include", headers: xsrf ? {"X-XSRFToken": xsrf} : {}});
        seen.status = response.status;
        seen.body = await response.text();
    } catch (error) {
        seen.error = String(error);
    }
    return seen;
}"""


def _scripted_from_a_students_page(ta, hub, student):
    """A page on ``student``'s domain, as their own server could send it (it is their process), opened
    in the TA's browser beside formgrader: its script reads none of formgrader's cookies, and its
    call to formgrader's API, the TA's cookies and all, is refused; from formgrader's own page the
    same call answers."""
    api = f"{hub.formgrader}/formgrader/api/assignments"
    own = ta.evaluate(CALL_FORMGRADER, api)
    assert own.get("status") == 200 and "attention" in own["body"], own       # the TA's own call
    url = f"{hub.server(student)}/trap.html"
    ta.context.route(url, lambda route: route.fulfill(status=200, content_type="text/html",
                                                     body="<html><body>a student's page</body></html>"))
    trap = ta.context.new_page()
    trap.goto(url)
    seen = trap.evaluate(CALL_FORMGRADER, api)
    trap.close()
    assert seen["origin"] == _origin(hub.server(student)) and "status" not in seen and "error" in seen, seen
    assert "_xsrf" not in seen["cookies"] and "jupyterhub" not in seen["cookies"], seen


# A student's process: it listens on the TCP port formgrader once had and asks formgrader's port
# itself; once formgrader is down (the test writes a line) it tries to take formgrader's place: its
# port and the hub's, its socket's folder, the socket, a socket of its own there; and at the next
# line it says whether anything reached its own port
SQUAT = """
import json, os, socket, sys
folder, path, port, hub, proxy = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def errno(act):
    try:
        act()
    except OSError as exc:
        return exc.errno
unix = lambda: socket.socket(socket.AF_UNIX)
tcp = socket.socket()
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if errno(lambda: tcp.bind(("127.0.0.1", 9999))):
    tcp.bind(("127.0.0.1", 0))
tcp.listen()
def ask(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as direct:
        try:
            direct.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
            return direct.recv(100).decode()
        except (ConnectionResetError, BrokenPipeError):
            return ""
print(json.dumps({"direct": ask(port)}), flush=True)
sys.stdin.readline()
print(json.dumps({"port": errno(lambda: socket.socket().bind(("127.0.0.1", port))),
                  "hub": errno(lambda: socket.socket().bind(("127.0.0.1", hub))),
                  "loopback": errno(lambda: socket.socket(socket.AF_INET6).bind(("::1", proxy))),
                  "list": errno(lambda: os.listdir(folder)), "connect": errno(lambda: unix().connect(path)),
                  "take": errno(lambda: unix().bind(path)), "beside": errno(lambda: unix().bind(path + "2")),
                  "move": errno(lambda: os.rename(folder, folder + ".old"))}), flush=True)
sys.stdin.readline()
tcp.setblocking(False)
print(json.dumps({"reached": errno(tcp.accept) is None}), flush=True)
"""


def _processes(uid, name):
    """The process ids of ``uid`` whose command line holds ``name``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/status") as fh:
                owner = int(re.search(r"^Uid:\s+(\d+)", fh.read(), re.M)[1])
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if owner == uid and name.encode() in fh.read():
                    found.append(int(pid))
    return found


def _tcp_ports(pid):
    """The TCP ports process ``pid`` listens on."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            if (found := re.fullmatch(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))):
                inodes.add(found[1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for fields in (line.split() for line in list(fh)[1:]):
                if fields[3] == "0A" and fields[9] in inodes:           # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _refused(path):
    """Whether connecting to the Unix socket ``path`` is refused: nothing listens there."""
    with socket.socket(socket.AF_UNIX) as unix:
        try:
            unix.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return True
    return False


def _formgrader_down(hub, ta, student):
    """formgrader listens on no TCP port, and its port answers root alone; no student can listen on
    [::1] at the proxy's port (127.0.0.1's), where `localhost` may lead. With formgrader gone
    (killed, as a crash would leave it), a student can take neither its port nor the hub's, enter
    its socket's folder, connect to its socket nor put one of their own there, and the TCP port they
    listen on gets nothing: the TA gets the proxy's 503."""
    formgrader = _processes(pwd.getpwnam(hub.grader).pw_uid, "jupyterhub-singleuser")
    assert formgrader and not any(_tcp_ports(pid) for pid in formgrader), formgrader
    folder = os.path.dirname(hub.formgrader_socket)
    squat = [sys.executable, "-c", SQUAT, folder, hub.formgrader_socket, str(hub.formgrader_port), str(hub.hub_api),
             str(hub.port)]
    with hub.accounts.started(student, squat) as squatting:
        asked = json.loads(squatting.stdout.readline())          # listening, and refused at formgrader's port
        for pid in formgrader:
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not _refused(hub.formgrader_socket) and time.monotonic() < deadline:
            time.sleep(0.1)
        squatting.stdin.write("down\n")
        squatting.stdin.flush()
        tried = json.loads(squatting.stdout.readline())
        response = ta.goto(f"{hub.formgrader}/formgrader")
        _shot(ta, "ta-9-formgrader-down", SHOTS)
        squatting.stdin.write("done\n")
        squatting.stdin.flush()
        reached = json.loads(squatting.stdout.readline())
    assert asked == {"direct": ""}, asked
    # the proxy's port on the other loopback, which `localhost` names too, is the hub's
    assert tried.pop("loopback") in (errno.EADDRINUSE, errno.EADDRNOTAVAIL), tried
    assert tried == dict.fromkeys(("port", "hub", "list", "connect", "take", "beside", "move"), errno.EACCES), tried
    assert reached == {"reached": False} and response.status == 503, (reached, response.status, response.url)


# A student's process listening in on a classmate's kernels: it subscribes to every TCP port the
# classmate's processes listen on, as they appear (a kernel's iopub channel is a ZeroMQ PUB socket,
# which sends each cell's code and output to any subscriber), and tries to list the classmate's
# runtime folder; at a line from the test it says what it received
OVERHEAR = """
import json, os, sys, zmq
victim, folder = int(sys.argv[1]), sys.argv[2]
def listening():
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for fields in (line.split() for line in list(fh)[1:]):
                if fields[3] == "0A" and int(fields[7]) == victim:
                    found.add(int(fields[1].rsplit(":", 1)[1], 16))
    return found
try:
    os.listdir(folder)
    listed = True
except OSError:
    listed = False
print(json.dumps({"listed": listed}), flush=True)
context, poller, subscribed, received = zmq.Context(), zmq.Poller(), {}, []
poller.register(sys.stdin, zmq.POLLIN)
while True:
    for port in listening() - set(subscribed):
        sub = subscribed[port] = context.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(f"tcp://127.0.0.1:{port}")
        poller.register(sub, zmq.POLLIN)
    ready = dict(poller.poll(200))
    for sub in subscribed.values():
        if sub in ready:
            received.append(b" ".join(sub.recv_multipart())[-300:].decode(errors="replace"))
    if sys.stdin in ready or sys.stdin.fileno() in ready:
        break
print(json.dumps({"ports": sorted(subscribed), "received": received}), flush=True)
"""


def _runtime_folder(hub, name):
    """The folder of ``name``'s server socket and kernels' sockets, their Jupyter runtime folder."""
    return os.path.join(hub.sockets, "u", str(pwd.getpwnam(name).pw_uid))


def _nothing_overheard(hub, listener, victim):
    """The listener (OVERHEAR) received nothing of ``victim``'s kernels, which ran all along."""
    kernels = _processes(pwd.getpwnam(victim).pw_uid, "ipykernel_launcher")
    listener.stdin.write("done\n")
    listener.stdin.flush()
    heard = json.loads(listener.stdout.readline())
    assert kernels, "no kernel of the classmate's ran"
    assert heard["received"] == [], heard
    folder = _runtime_folder(hub, victim)
    # theirs alone (Jupyter adds the sticky bit to a runtime folder, against cleaners of /run and /tmp)
    assert os.stat(folder).st_mode & 0o777 == 0o700 and os.stat(folder).st_uid == pwd.getpwnam(victim).pw_uid
    assert any(n.startswith("kernel-") and n.endswith("-ipc-1") for n in os.listdir(folder)), os.listdir(folder)


def _trains_on_the_corpus(hub, page, name):
    """``name`` fetches weighted_attention in the Assignments tab and runs its first cells to the
    one that loads the corpus: the hub gave their server the course's copy, which they cannot change."""
    page.goto(f"{hub.server(name)}/lab")
    page.wait_for_selector("#jp-main-dock-panel")
    released = _assignment_list(page)
    released.locator(".list_item", has_text="weighted_attention").get_by_role("button", name="Fetch").click()
    page.locator("#fetched_assignments_list .list_item", has_text="weighted_attention").first.wait_for()
    with open(os.path.join(hub.home(name), "weighted_attention", "weighted_attention.ipynb")) as fh:
        notebook = json.load(fh)
    page.goto(f"{hub.server(name)}/lab/tree/weighted_attention/weighted_attention.ipynb")
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=90_000)
    _run(page, _index(notebook, "imports"))
    output = _run(page, _index(notebook, "show_data"))
    _cells(page).nth(_index(notebook, "show_data")).scroll_into_view_if_needed()
    _shot(page, "student1-7-corpus", SHOTS)
    assert "1,115,394 characters, vocabulary of 65" in output, output
    shared = os.path.join(sys.prefix, "share", "course-hub", hub.course.course_id, corpus.NAME)
    assert hub.accounts.probe(name, shared)[shared]["read"]
    done = hub.accounts.run(name, [sys.executable, "-c", f"open({shared!r}, 'a')"], check=False)
    assert done.returncode != 0 and "PermissionError" in done.stderr, done.stderr


# A student's process after a classmate's server: it asks the server's port itself; at a line
# from the test (the server is dead by then) it tries to bind that port, and goes on trying until
# the next line, accepting whatever reaches it once bound
TAKE_PORT = """
import json, select, socket, sys
port = int(sys.argv[1])
with socket.create_connection(("127.0.0.1", port), timeout=10) as direct:
    try:
        direct.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
        asked = direct.recv(100).decode()
    except (ConnectionResetError, BrokenPipeError):
        asked = ""
print(json.dumps({"direct": asked}), flush=True)
sys.stdin.readline()
tcp = socket.socket()
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
def take():
    try:
        tcp.bind(("127.0.0.1", port))
    except OSError as exc:
        return exc.errno
    tcp.listen()
    tcp.setblocking(False)
first = take()
print(json.dumps({"first": first}), flush=True)
bound, reached = first is None, False
while not select.select([sys.stdin], [], [], 0.05)[0]:
    if not bound:
        bound = take() is None
    else:
        try:
            tcp.accept()
            reached = True
        except BlockingIOError:
            pass
print(json.dumps({"bound": bound, "reached": reached}), flush=True)
"""


def _server_port(hub, name):
    """The loopback port the hub sends ``name``'s requests to, from the hub's database."""
    import sqlite3
    with contextlib.closing(sqlite3.connect(os.path.join(hub.state, "jupyterhub.sqlite"))) as db:
        (port,), = db.execute("SELECT servers.port FROM servers JOIN spawners ON spawners.server_id = servers.id "
                              "JOIN users ON spawners.user_id = users.id WHERE users.name = ?", (name,)).fetchall()
    return port


def _dead_servers_port(hub, page, student, victim):
    """``victim``'s server answers none of ``student``'s connections to its port; killed (as a crash
    would leave it), ``student`` cannot bind that port while the hub routes to it, and nothing
    ``victim``'s browser asks reaches ``student``, before the hub notices or after."""
    port = _server_port(hub, victim)
    with hub.accounts.started(student, [sys.executable, "-c", TAKE_PORT, str(port)]) as taking:
        asked = json.loads(taking.stdout.readline())
        server = _processes(pwd.getpwnam(victim).pw_uid, "jupyterhub-singleuser")
        for pid in server:
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _processes(pwd.getpwnam(victim).pw_uid, "jupyterhub-singleuser") and time.monotonic() < deadline:
            time.sleep(0.05)                          # dead, its sockets closed (a zombie has no command line)
        taking.stdin.write("go\n")
        taking.stdin.flush()
        first = json.loads(taking.stdout.readline())
        # the victim's lab keeps asking its server, until the hub (which looks every 5 seconds)
        # has noticed and given the port back, and a little after
        deadline, noticed = time.monotonic() + 15, None
        while time.monotonic() < min(deadline, (noticed or deadline) + 2):
            with contextlib.suppress(Exception):
                answer = page.goto(f"{hub.server(victim)}/api/status", timeout=5000)
                if noticed is None and "no longer running" in answer.text():
                    noticed = time.monotonic()
            time.sleep(0.3)
        _shot(page, "student2-8-server-dead", SHOTS)
        taking.stdin.write("done\n")
        taking.stdin.flush()
        took = json.loads(taking.stdout.readline())
    assert asked == {"direct": ""}, asked
    assert first == {"first": errno.EADDRINUSE}, first
    assert noticed and took == {"bound": True, "reached": False}, (noticed, took)   # given back, unrouted


def _asked_as_root(port, path):
    """The first bytes of the answer to a GET of ``path`` on 127.0.0.1:``port``, asked as root (as
    the proxy asks): "" when the connection is closed unanswered."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        try:
            connection.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
            return connection.recv(100).decode()
        except (ConnectionResetError, BrokenPipeError):
            return ""


def _links_own_socket(hub, student):
    """A student who puts in their server's place a link to a socket only root can reach (here the
    proxy's API) gets nothing through it: the hub connects only to a socket of the student's own,
    never through a link. (Asked on a new connection to the hub's port for the server, as the
    proxy asks: the proxy keeps its connections open.)"""
    port, path = _server_port(hub, student), f"/user/{student}/api/routes"
    before = _asked_as_root(port, path)
    own = os.path.join(_runtime_folder(hub, student), "server.sock")
    target = os.path.join(hub.sockets, "proxy", "api.sock")
    hub.accounts.run(student, [sys.executable, "-c", "import os, sys; os.unlink(sys.argv[1]); "
                                                     "os.symlink(sys.argv[2], sys.argv[1])", own, target])
    assert os.path.islink(own)
    after = _asked_as_root(port, path)
    assert before.startswith("HTTP/1.") and after == "", (before, after)

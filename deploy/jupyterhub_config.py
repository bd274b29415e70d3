"""JupyterHub for this course: one Unix account per person, PAM logins, the local process spawner,
and formgrader as a hub-managed service running as the grading account.

Who is who comes from two Unix groups, as nbgrader names them: `nbgrader-<course_id>` (students)
and `formgrade-<course_id>` (instructors and TAs). Only their members log in; at each login the
hub copies the account's membership into its own groups of the same names. The second group's
role grants access to the service `<course_id>` (formgrader in the course folder, as the grading
account); everyone else gets 403 there. Each spawned server gets the nbgrader extensions of its
role (deploy/jupyter/<role>/), the course's exchange and id (deploy/jupyter/course/) and kernels
over ipc (deploy/jupyter/ipc/), copied into the course's environment at each start, since the
course folder is private, and the corpus, copied there too (read-only, $TINYSHAKESPEARE). No server starts
in a home other accounts can enter: the hub closes it first, or refuses.

No student can listen where the hub sends anyone: any local account (a student's own server runs
as the student, on this machine) can take a free TCP port above 1023, and while a server is down
(a restart, a crash) would receive whoever the hub sends to its port. So formgrader listens on a
Unix socket in a folder only the grading account (and root) can enter, and the hub and its proxy
reach it through 127.0.0.1:COURSE_FORMGRADER_PORT, below 1024, which the hub holds itself and
relays to the socket; the hub's API is on such a port too, and the proxy's API on a socket of
root's. Each user's server listens on a Unix socket in a folder of its user's alone, where its
kernels' sockets are too (`ipc`, not TCP), behind a loopback port the hub holds from before the
server starts until the proxy's route to it is gone (autograder/hub/). (JupyterHub 6 takes only an http(s) URL for a service, and configurable-http-proxy 5
fails requests with a body to a Unix socket whenever the server answers and closes first: hence
the relay rather than a route to the socket.) With COURSE_HUB_SUBDOMAIN_HOST, each user's server
and formgrader have an origin of their own, so no student's page can script against formgrader in
a TA's browser.

Run as root from the course's environment, in a folder of its own (its database and cookie
secret are written there); README, "On a JupyterHub". Settings come from the environment:

COURSE_YAML                the course folder's course.yaml (default: the course this environment
                           was installed from)
COURSE_GRADER              the grading account, which owns the course folder (default: grader-<course_id>)
COURSE_FORMGRADER_PORT     the port below 1024 where the hub takes formgrader's requests to its
                           socket, on 127.0.0.1 (default: 882; the hub's API is on 881)
COURSE_HUB_SOCKETS         the folder of formgrader's and the proxy's sockets, below folders only
                           root can change (default: /run/course-hub/<course_id>)
COURSE_HUB_SUBDOMAIN_HOST  e.g. https://hub.example.edu: each user's server on <name>.hub.example.edu,
                           formgrader on <course_id>--service.hub.example.edu (JupyterHub's
                           subdomain_host: a wildcard DNS name and certificate); unset, every page is
                           on the hub's one origin
"""
import asyncio
import errno
import grp
import os
import pwd
import shutil
import socket
import stat
import sys
import urllib.parse

from jupyterhub.auth import PAMAuthenticator

from autograder.course import config as course_config
from autograder.course.corpus import CorpusError
from autograder.hub.data import share_corpus
from autograder.hub.sockets import Relay, pump, socket_folder, socket_url
from autograder.hub.spawner import KERNEL_SOCKET, UNIX_PATH_MAX
from autograder.nbgrader import exchange as course_exchange

c = get_config()  # noqa: F821 - get_config is provided by JupyterHub

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(sys.prefix, "bin")
course = course_config.load(os.environ.get("COURSE_YAML") or None)
STUDENTS, GRADERS = f"nbgrader-{course.course_id}", f"formgrade-{course.course_id}"
GRADER = os.environ.get("COURSE_GRADER", f"grader-{course.course_id}")
FORMGRADER_PORT = int(os.environ.get("COURSE_FORMGRADER_PORT", "882"))
SOCKETS = os.path.abspath(os.environ.get("COURSE_HUB_SOCKETS") or f"/run/course-hub/{course.course_id}")
SUBDOMAIN_HOST = os.environ.get("COURSE_HUB_SUBDOMAIN_HOST", "")


def _unreadable(path):
    """The first folder or file on the way to ``path`` that other accounts cannot pass, or None."""
    path = os.path.realpath(path)
    parts = [path] + [os.path.dirname(path)]
    while parts[-1] != os.sep:
        parts.append(os.path.dirname(parts[-1]))
    for part in reversed(parts):
        if not os.stat(part).st_mode & stat.S_IXOTH:
            return part
    return None


# Every server the hub spawns runs this environment's Python as its user, and reads its role's
# settings from it: an environment under /root or a private home would fail at each student's
# first login, so say it now.
for needed in (sys.executable, os.path.join(BIN, "jupyterhub-singleuser")):
    blocked = _unreadable(needed)
    if blocked:
        sys.exit(f"error: {needed} is not reachable by other accounts ({blocked} is closed to them): "
                 "install the course's environment where every account can read it, e.g. /opt "
                 "(README, 'On a JupyterHub')")
for name, kind in ((STUDENTS, "group"), (GRADERS, "group"), (GRADER, "account")):
    try:
        (grp.getgrnam if kind == "group" else pwd.getpwnam)(name)
    except KeyError:
        sys.exit(f"error: the Unix {kind} {name} does not exist (README, 'On a JupyterHub')")


# formgrader's socket, the grading account's alone, and the proxy's API, root's
try:
    PROXY_API = os.path.join(socket_folder(os.path.join(SOCKETS, "proxy")), "api.sock")
    FORMGRADER = os.path.join(socket_folder(os.path.join(SOCKETS, "formgrader"), GRADER), "formgrader.sock")
except RuntimeError as exc:
    sys.exit(f"error: {exc}")


def clear_stale_socket(path):
    """A socket left at ``path`` by a hub that did not stop cleanly (killed, crashed, restarted by
    systemd after a timeout) would stop the proxy from listening there (EADDRINUSE) and so the hub
    at every later start: removed (its folder is root's alone, so root left it), unless something
    still answers there, which is another hub of this course running."""
    if not os.path.lexists(path):
        return
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
    else:
        sys.exit(f"error: something already answers on {path}: another hub of this course is running "
                 "(README, 'On a JupyterHub')")
    finally:
        probe.close()


def _starting_hub():
    """Whether this configuration is loaded by a hub starting (in its event loop), not by one of
    jupyterhub's subcommands (token, upgrade-db), which start no proxy."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


if _starting_hub():
    clear_stale_socket(PROXY_API)
if len(os.fsencode(os.path.dirname(FORMGRADER))) + KERNEL_SOCKET > UNIX_PATH_MAX:
    sys.exit(f"error: {os.path.dirname(FORMGRADER)} is too long a path for the Unix sockets of formgrader and "
             "its kernels: set a shorter COURSE_HUB_SOCKETS (README, 'On a JupyterHub')")
with open("/proc/sys/net/ipv4/ip_unprivileged_port_start") as fh:
    if FORMGRADER_PORT >= int(fh.read()):
        sys.exit(f"error: COURSE_FORMGRADER_PORT={FORMGRADER_PORT} is a port any account can listen on: "
                 "give one below net.ipv4.ip_unprivileged_port_start (README, 'On a JupyterHub')")
c.JupyterHub.hub_bind_url = "http://127.0.0.1:881"
c.ConfigurableHTTPProxy.api_url = socket_url(PROXY_API)

# 127.0.0.1:FORMGRADER_PORT, held by the hub as long as it runs and relayed to formgrader's socket
# for root's connections alone (the proxy's, the hub's): while formgrader restarts, no account can
# listen there in its place
if _starting_hub():
    FORMGRADER_RELAY = Relay(FORMGRADER, pwd.getpwnam(GRADER).pw_uid, FORMGRADER_PORT)
    FORMGRADER_SERVING = asyncio.get_running_loop().create_task(FORMGRADER_RELAY.serve())


def _hold_other_loopback():
    """With the proxy on one loopback address (``--JupyterHub.bind_url=http://127.0.0.1:8000``),
    the same port of the other (``[::1]:8000``) is free to any account, and ``localhost`` names
    both: a browser on this machine (Chromium tries ``::1`` first), an SSH tunnel or a front end
    that dials ``localhost:8000`` would reach a student's listener there and type its passwords
    into it. The hub holds that port too, for as long as it runs, relaying it to the proxy; one
    already taken stops the hub, saying so."""
    if not _starting_hub():
        return None
    from jupyterhub.app import JupyterHub
    bind_url = JupyterHub.instance().cli_config.JupyterHub.get("bind_url") or c.JupyterHub.get("bind_url")
    parts = urllib.parse.urlsplit(bind_url or "")
    other = {"127.0.0.1": ("::1", socket.AF_INET6), "::1": ("127.0.0.1", socket.AF_INET)}.get(parts.hostname or "")
    if other is None or parts.scheme not in ("http", "https"):
        return None                   # every interface (the proxy has both loopbacks), or none
    port = parts.port or {"http": 80, "https": 443}[parts.scheme]
    try:
        listener = socket.create_server((other[0], port), family=other[1])
    except OSError as exc:
        if exc.errno == errno.EADDRNOTAVAIL:
            return None               # no such loopback here: nobody can listen on it either
        sys.exit(f"error: cannot hold {other[0]} port {port} beside the proxy's {parts.hostname} "
                 f"({exc.strerror}): another account listens there, and would receive whoever opens "
                 f"localhost:{port}; stop it, or bind the hub elsewhere (README, 'On a JupyterHub')")

    async def relay(client, to_client):
        try:
            server, to_server = await asyncio.open_connection(parts.hostname, port)
        except OSError:
            to_client.close()
            return
        await asyncio.gather(pump(client, to_server), pump(server, to_client))
    return asyncio.get_running_loop().create_task(asyncio.start_server(relay, sock=listener))


LOOPBACK_RELAY = _hold_other_loopback()


def course_groups(name):
    """The course groups Unix puts ``name`` in."""
    entry = pwd.getpwnam(name)
    gids = set(os.getgrouplist(name, entry.pw_gid))
    return sorted(g for g in (STUDENTS, GRADERS) if grp.getgrnam(g).gr_gid in gids)


class CourseAuthenticator(PAMAuthenticator):
    """PAM logins; the hub's course groups follow the account's Unix groups, read at each login
    and again every `auth_refresh_age` (five minutes), so a TA taken out of the group with
    `gpasswd -d` loses formgrader without logging out."""

    async def authenticate(self, handler, data):
        name = await super().authenticate(handler, data)
        return {"name": name, "groups": course_groups(name)} if name else None

    async def refresh_user(self, user, handler=None):
        return {"name": user.name, "groups": course_groups(user.name)}


c.JupyterHub.authenticator_class = CourseAuthenticator
c.Authenticator.manage_groups = True
c.LocalAuthenticator.allowed_groups = {STUDENTS, GRADERS}
c.JupyterHub.load_roles = [{
    "name": f"graders-{course.course_id}",
    "groups": [GRADERS],
    "scopes": [f"access:services!service={course.course_id}", "list:services",
               f"read:services!service={course.course_id}"],
}]

proxy = os.path.join(BIN, "configurable-http-proxy")
if os.path.exists(proxy):
    c.ConfigurableHTTPProxy.command = [proxy]

exchange = {"COURSE_ID": course.course_id, "COURSE_EXCHANGE_ROOT": course_exchange.root(course)}


# The course folder, which holds this file, is the grading account's alone: the servers' settings
# are copied into the course's environment, where their users can read them.
SETTINGS = os.path.join(sys.prefix, "etc", "course-hub")
shutil.rmtree(SETTINGS, ignore_errors=True)
shutil.copytree(os.path.join(HERE, "jupyter"), SETTINGS)


def _extensions(role):
    """A role's settings, the course's exchange and id, and kernels over ipc."""
    return os.pathsep.join(os.path.join(SETTINGS, d) for d in (role, "course", "ipc"))


# the course's data (the corpus), read-only for every server, in the course's environment
try:
    DATA = share_corpus(course, os.path.join(sys.prefix, "share", "course-hub", course.course_id))
except CorpusError as exc:
    sys.exit(f"error: {exc} (docs/tutorials/jupyterhub.md, step 2)")


def private_home(spawner):
    """Before a server starts: its user's home is theirs alone. A home other accounts may enter
    (0755 is `useradd -m`'s default on Debian) shows a classmate's notebooks and the submission
    secret nbgrader keeps there, which names their feedback page; it is closed (group and other
    bits cleared, said in the log), and a home that is another's or cannot be closed stops the
    spawn, saying why."""
    entry = pwd.getpwnam(spawner.user.name)
    info = os.stat(entry.pw_dir)
    if info.st_uid != entry.pw_uid:
        raise RuntimeError(f"the home {entry.pw_dir} is not {entry.pw_name}'s own: ask the administrator "
                           "to give it to them (README, 'On a JupyterHub')")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        try:
            os.chmod(entry.pw_dir, mode & ~0o077)
        except OSError as exc:
            raise RuntimeError(f"the home {entry.pw_dir} is open to other accounts (mode {mode:04o}) and "
                               f"could not be closed ({exc.strerror}): ask the administrator to "
                               f"`chmod 700 {entry.pw_dir}` (README, 'On a JupyterHub')") from None
        spawner.log.warning("Closed %s's home %s to other accounts: mode %04o, now %04o",
                            entry.pw_name, entry.pw_dir, mode, mode & ~0o077)


c.Spawner.pre_spawn_hook = private_home
# A server that dies other than through the hub keeps the proxy's route to its port (the hub's, which
# answers nothing) until the hub's next look: every 5 seconds, not JupyterHub's 30
c.Spawner.poll_interval = 5
# each server on a Unix socket in its user's own folder, SOCKETS/u/<uid>, also its Jupyter runtime
# folder (kernels over ipc there), behind a loopback port the hub holds (autograder/hub/spawner.py)
c.JupyterHub.spawner_class = "autograder.hub.spawner.CourseSpawner"
c.CourseSpawner.sockets = SOCKETS
c.Spawner.cmd = [os.path.join(BIN, "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.environment = dict(
    exchange,
    **DATA,
    # a lab extension of the course's (deploy/jupyter/share/labextensions/): nbgrader's "(view
    # feedback)" opens the feedback page, not only its folder
    JUPYTER_PATH=os.path.join(SETTINGS, "share"),
    JUPYTER_CONFIG_PATH=lambda spawner: _extensions(
        "ta" if GRADERS in {g.name for g in spawner.user.groups} else "student"),
)

# the hub reaches formgrader at its port, and hands the service that URL: the command gives
# jupyterhub-singleuser its socket's instead
c.JupyterHub.services = [{
    "name": course.course_id,
    "display": True,
    "url": f"http://127.0.0.1:{FORMGRADER_PORT}",
    "command": [shutil.which("env"), f"JUPYTERHUB_SERVICE_URL={socket_url(FORMGRADER)}",
                os.path.join(BIN, "jupyterhub-singleuser"), f"--ServerApp.sock={FORMGRADER}"],
    "user": GRADER,
    "cwd": course.root,
    "oauth_no_confirm": True,
    "environment": {"JUPYTER_CONFIG_PATH": os.pathsep.join(os.path.join(SETTINGS, d) for d in ("formgrader", "ipc")),
                    "JUPYTER_RUNTIME_DIR": os.path.dirname(FORMGRADER), **DATA,
                    "JUPYTERHUB_DEFAULT_URL": "/formgrader",
                    "JUPYTERHUB_COOKIE_HOST_PREFIX_ENABLED": str(int(bool(SUBDOMAIN_HOST)))},
}]

# Each user's server and formgrader on a domain of its own, and every login cookie locked to its
# host (`__Host-`), so that no subdomain can set them for another (JupyterHub's advice since 4.1);
# browsers keep such cookies only from https
if SUBDOMAIN_HOST:
    if not SUBDOMAIN_HOST.startswith("https://"):
        sys.exit(f"error: COURSE_HUB_SUBDOMAIN_HOST={SUBDOMAIN_HOST} must start with https:// "
                 "(README, 'On a JupyterHub')")
    c.JupyterHub.subdomain_host = SUBDOMAIN_HOST
    c.JupyterHub.cookie_host_prefix_enabled = True

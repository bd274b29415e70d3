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
secret are written there), from the root-owned copy of this file and the code it imports that
`make hub` makes (`-f <environment>/lib/course-hub/deploy/jupyterhub_config.py`): as root, it
refuses to run code another account can change; docs/tutorials/jupyterhub.md. Settings come from
the environment:

COURSE_YAML                the course folder's course.yaml (default: the course the copy was made
                           from)
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
import os
import pwd
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# the code beside this file comes first: in the copy `make hub` makes (autograder/hub/code_copy.py),
# root's alone, rather than the grading account's course folder
CODE = os.path.dirname(HERE)
sys.path.insert(0, CODE)

from autograder.course import config as course_config  # noqa: E402
from autograder.course.corpus import CorpusError  # noqa: E402
from autograder.hub import code_copy, startup  # noqa: E402
from autograder.hub.data import share_corpus  # noqa: E402
from autograder.hub.homes import private_home  # noqa: E402
from autograder.hub.sockets import Relay, socket_folder, socket_url  # noqa: E402
from autograder.hub.spawner import KERNEL_SOCKET, UNIX_PATH_MAX  # noqa: E402
from autograder.nbgrader import exchange as course_exchange  # noqa: E402

c = get_config()  # noqa: F821 - get_config is provided by JupyterHub

BIN = os.path.join(sys.prefix, "bin")
startup.require_roots_code(os.path.abspath(__file__), os.path.join(CODE, "autograder"), os.path.join(CODE, "selfcheck"))
course = course_config.load(os.environ.get("COURSE_YAML") or code_copy.course_yaml(CODE))
STUDENTS, GRADERS = f"nbgrader-{course.course_id}", f"formgrade-{course.course_id}"
GRADER = os.environ.get("COURSE_GRADER", f"grader-{course.course_id}")
FORMGRADER_PORT = int(os.environ.get("COURSE_FORMGRADER_PORT", "882"))
SOCKETS = os.path.abspath(os.environ.get("COURSE_HUB_SOCKETS") or f"/run/course-hub/{course.course_id}")
SUBDOMAIN_HOST = os.environ.get("COURSE_HUB_SUBDOMAIN_HOST", "")

startup.require_reachable(sys.executable, os.path.join(BIN, "jupyterhub-singleuser"))
startup.require_accounts([STUDENTS, GRADERS], [GRADER])
# formgrader's socket, the grading account's alone, and the proxy's API, root's
try:
    PROXY_API = os.path.join(socket_folder(os.path.join(SOCKETS, "proxy")), "api.sock")
    FORMGRADER = os.path.join(socket_folder(os.path.join(SOCKETS, "formgrader"), GRADER), "formgrader.sock")
except RuntimeError as exc:
    sys.exit(f"error: {exc}")
if len(os.fsencode(os.path.dirname(FORMGRADER))) + KERNEL_SOCKET > UNIX_PATH_MAX:
    sys.exit(f"error: {os.path.dirname(FORMGRADER)} is too long a path for the Unix sockets of formgrader and "
             f"its kernels: set a shorter COURSE_HUB_SOCKETS {startup.HELP}")
startup.require_privileged_port("COURSE_FORMGRADER_PORT", FORMGRADER_PORT)
c.JupyterHub.hub_bind_url = "http://127.0.0.1:881"
c.ConfigurableHTTPProxy.api_url = socket_url(PROXY_API)

if startup.starting_hub():
    startup.clear_stale_socket(PROXY_API)
    # 127.0.0.1:FORMGRADER_PORT, held by the hub as long as it runs and relayed to formgrader's
    # socket for root's connections alone (the proxy's, the hub's): while formgrader restarts, no
    # account can listen there in its place
    FORMGRADER_RELAY = Relay(FORMGRADER, pwd.getpwnam(GRADER).pw_uid, FORMGRADER_PORT)
    FORMGRADER_SERVING = asyncio.get_running_loop().create_task(FORMGRADER_RELAY.serve())
    # the other loopback's port of the proxy's, held too
    from jupyterhub.app import JupyterHub
    LOOPBACK_RELAY = startup.hold_other_loopback(JupyterHub.instance().cli_config.JupyterHub.get("bind_url")
                                                 or c.JupyterHub.get("bind_url"))

c.JupyterHub.authenticator_class = "autograder.hub.authenticator.CourseAuthenticator"
c.CourseAuthenticator.course_groups = [STUDENTS, GRADERS]
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

"""JupyterHub for this course: one Unix account per person, PAM logins, the local process spawner,
and formgrader as a hub-managed service running as the grading account.

Who is who comes from two Unix groups, as nbgrader names them: `nbgrader-<course_id>` (students)
and `formgrade-<course_id>` (instructors and TAs). Only their members log in; at each login the
hub copies the account's membership into its own groups of the same names. The second group's
role grants access to the service `<course_id>` (formgrader in the course folder, as the grading
account); everyone else gets 403 there. Each spawned server gets the nbgrader extensions of its
role (deploy/jupyter/<role>/) and the course's exchange and id (deploy/jupyter/course/), copied
into the course's environment at each start, since the course folder is private. No server starts
in a home other accounts can enter: the hub closes it first, or refuses.

Run as root from the course's environment, in a folder of its own (its database and cookie
secret are written there); README, "On a JupyterHub". Settings come from the environment:

COURSE_YAML             the course folder's course.yaml (default: the course this environment
                        was installed from)
COURSE_GRADER           the grading account, which owns the course folder (default: grader-<course_id>)
COURSE_FORMGRADER_PORT  the port formgrader listens on, on 127.0.0.1 (default: 9999)
"""
import grp
import os
import pwd
import shutil
import stat
import sys

from jupyterhub.auth import PAMAuthenticator

from autograder import config as course_config
from autograder.nbgrader import exchange as course_exchange

c = get_config()  # noqa: F821 - get_config is provided by JupyterHub

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(sys.prefix, "bin")
course = course_config.load(os.environ.get("COURSE_YAML") or None)
STUDENTS, GRADERS = f"nbgrader-{course.course_id}", f"formgrade-{course.course_id}"
GRADER = os.environ.get("COURSE_GRADER", f"grader-{course.course_id}")
FORMGRADER_PORT = int(os.environ.get("COURSE_FORMGRADER_PORT", "9999"))


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
    return os.pathsep.join(os.path.join(SETTINGS, d) for d in (role, "course"))


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
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [os.path.join(BIN, "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.environment = dict(
    exchange,
    JUPYTER_CONFIG_PATH=lambda spawner: _extensions(
        "ta" if GRADERS in {g.name for g in spawner.user.groups} else "student"),
)

c.JupyterHub.services = [{
    "name": course.course_id,
    "display": True,
    "url": f"http://127.0.0.1:{FORMGRADER_PORT}",
    "command": [os.path.join(BIN, "jupyterhub-singleuser")],
    "user": GRADER,
    "cwd": course.root,
    "oauth_no_confirm": True,
    "environment": {"JUPYTER_CONFIG_PATH": os.path.join(SETTINGS, "formgrader"),
                    "JUPYTERHUB_DEFAULT_URL": "/formgrader"},
}]

"""Who may log in to the course's hub, and in which of its groups: Unix accounts through PAM, their
course groups (students, instructors and TAs) read from Unix at each login and again every
``auth_refresh_age`` (five minutes), so a TA taken out of the group with ``gpasswd -d`` loses
formgrader without logging out."""

from __future__ import annotations

import grp
import os
import pwd
from typing import Any

from jupyterhub.auth import PAMAuthenticator
from traitlets import List, Unicode


def course_groups(name: str, groups: list[str]) -> list[str]:
    """The groups of ``groups`` Unix puts ``name`` in."""
    entry = pwd.getpwnam(name)
    gids = set(os.getgrouplist(name, entry.pw_gid))
    return sorted(g for g in groups if grp.getgrnam(g).gr_gid in gids)


class CourseAuthenticator(PAMAuthenticator):
    """PAM logins; the hub's groups of ``course_groups`` follow the account's Unix groups."""

    course_groups = List(Unicode(), help="the Unix groups the hub keeps groups of the same names for").tag(config=True)

    async def authenticate(self, handler: Any, data: dict) -> dict | None:
        name = await super().authenticate(handler, data)
        return {"name": name, "groups": course_groups(name, self.course_groups)} if name else None

    async def refresh_user(self, user: Any, handler: Any = None) -> dict:
        return {"name": user.name, "groups": course_groups(user.name, self.course_groups)}

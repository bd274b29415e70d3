"""No server starts in a home other accounts can enter."""

from __future__ import annotations

import os
import pwd
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jupyterhub.spawner import Spawner


def private_home(spawner: Spawner) -> None:
    """Before a server starts (the spawner's ``pre_spawn_hook``): its user's home is theirs alone.
    A home other accounts may enter (0755 is ``useradd -m``'s default on Debian) shows a classmate's
    notebooks and the submission secret nbgrader keeps there, which names their feedback page; it
    is closed (group and other bits cleared, said in the log), and a home that is another's or
    cannot be closed stops the spawn, saying why."""
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

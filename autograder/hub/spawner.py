"""Each user's server where no other account can reach it or take its place.

JupyterHub's local process spawner gives each server a TCP port above 1023 of 127.0.0.1, and
Jupyter gives each kernel five more: any account can connect to those (a kernel's iopub channel
is a ZeroMQ PUB socket that sends every cell's code and output to any subscriber, signed but not
encrypted), and take a server's port once it dies, receiving that user's requests and cookie
until the hub notices. Here each server listens on a Unix socket in a folder of its user's alone
(``<sockets>/u/<uid>``, 0700, below folders only root can change), which is also the server's
Jupyter runtime folder, where its kernels' connection files and ``ipc`` sockets go (the
servers' settings, deploy/jupyter/ipc/, choose that transport); the hub reaches the server
through a loopback port it holds itself from before the server starts until the proxy's route
to it is gone, and carries root's connections alone (:class:`~autograder.hub.sockets.Relay`).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
from typing import Any

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode

from autograder.hub.sockets import Relay, socket_folder, socket_url

# The longest path of a kernel's ipc sockets below a runtime folder: "/kernel-<uuid>-ipc-<n>"
KERNEL_SOCKET = len("/kernel-00000000-0000-0000-0000-000000000000-ipc-999")
UNIX_PATH_MAX = 107


def user_folder(sockets: str, name: str) -> str:
    """``<sockets>/u/<uid>``, made or checked: ``name``'s alone (0700), below ``<sockets>/u``,
    root's (0711: every account passes it, none lists whose folders are there). RuntimeError
    when a folder above is not root's alone, or the path is too long for a kernel's sockets."""
    entry = pwd.getpwnam(name)
    socket_folder(os.path.join(sockets, "u"), mode=0o711)
    folder = os.path.join(sockets, "u", str(entry.pw_uid))
    if len(os.fsencode(folder)) + KERNEL_SOCKET > UNIX_PATH_MAX:
        raise RuntimeError(f"{folder} is too long a path for the Unix sockets of a kernel: set a shorter "
                           "COURSE_HUB_SOCKETS (README, 'On a JupyterHub')")
    return socket_folder(folder, name)


class CourseSpawner(LocalProcessSpawner):
    """The local process spawner, each server on a Unix socket in its user's own folder, behind a
    loopback port the hub holds (module docstring)."""

    sockets = Unicode(help="The folder of the hub's sockets (root's); users' folders are in its u/.").tag(config=True)

    relay: Relay | None = None
    socket_path = ""

    async def start(self) -> Any:
        folder = user_folder(self.sockets, self.user.name)
        self.socket_path = os.path.join(folder, "server.sock")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)             # a killed server's
        self._release()
        self.relay = await Relay(self.socket_path, pwd.getpwnam(self.user.name).pw_uid).serve()
        self.port = self.relay.port
        return await super().start()

    def get_args(self) -> list[str]:
        return [*super().get_args(), f"--ServerApp.sock={self.socket_path}"]

    def get_env(self) -> dict[str, str]:
        env = super().get_env()
        # jupyterhub-singleuser takes its port from this URL, and jupyter-server refuses a port
        # beside a socket: the socket's URL (its base URL is JUPYTERHUB_SERVICE_PREFIX)
        env["JUPYTERHUB_SERVICE_URL"] = socket_url(self.socket_path)
        env["JUPYTER_RUNTIME_DIR"] = os.path.dirname(self.socket_path)
        return env

    async def poll(self) -> int | None:
        """As the local spawner's; and a server an earlier hub left running (killed before it could
        stop its servers) gets its port held again, or, when another account took it meanwhile,
        is stopped: the proxy's route to it leads to that account."""
        status = await super().poll()
        if status is None and self.relay is None and self.socket_path:
            try:
                self.relay = await Relay(self.socket_path, pwd.getpwnam(self.user.name).pw_uid, self.port).serve()
            except OSError as exc:
                self.log.warning("Stopping %s's server: its port %s is taken (%s)", self.user.name, self.port,
                                 exc.strerror)
                await self._signal(signal.SIGKILL)
                self.clear_state()
                return 1
        return status

    def load_state(self, state: dict) -> None:
        super().load_state(state)
        self.socket_path = state.get("socket", "")
        self.port = state.get("relay_port", 0)

    def get_state(self) -> dict:
        state = super().get_state()
        if self.pid and self.socket_path:
            state.update(socket=self.socket_path, relay_port=self.port)
        return state

    def run_post_stop_hook(self) -> Any:
        """After a stop, whether the hub's or a crash the hub noticed: the proxy's route is gone by
        now, and only now the port is given back."""
        self._release()
        with contextlib.suppress(FileNotFoundError):
            if self.socket_path:
                os.unlink(self.socket_path)
        return super().run_post_stop_hook()

    def _release(self) -> None:
        if self.relay is not None:
            self.relay.close()
            self.relay = None

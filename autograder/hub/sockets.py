"""Where the hub's servers listen, so that no student can listen in their place or reach them.

Any local account (a student's own server runs as the student, on the hub's machine) can take a
free TCP port above 1023, and while a server is down would receive whoever the hub sends to its
port. So servers listen on Unix sockets, each in a folder only its owner (and root) can enter,
below folders only root can change (:func:`socket_folder`), and the hub reaches each through a
loopback TCP port it holds itself for as long as the server may be routed to (:class:`Relay`):
the relay carries root's connections (the proxy's and the hub's) to the socket and closes any
other at once, so an account that connects there gets nothing, and none can bind the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import pwd
import socket
import stat
import string

LOOPBACK = "127.0.0.1"


def socket_folder(path: str, owner: str = "root", *, mode: int = 0o700) -> str:
    """The folder ``path``, made if missing, ``owner``'s with ``mode`` (their own alone, 0700, by
    default), below folders that root alone can change (else another account could move it aside
    and listen in its place) and every account can pass; anything else there raises RuntimeError,
    saying why."""
    folder = os.sep
    for name in os.path.normpath(path).split(os.sep)[1:]:
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or not info.st_mode & stat.S_IXOTH or \
                info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            raise RuntimeError(f"{folder} must be a folder of root's that other accounts can pass but not "
                               f"change, to hold {path}: set COURSE_HUB_SOCKETS below such folders "
                               "(README, 'On a JupyterHub')")
        folder = os.path.join(folder, name)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o755)
    entry, info = pwd.getpwnam(owner), os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in (0, entry.pw_uid):
        raise RuntimeError(f"{folder} is not a folder of root's or {owner}'s: remove it "
                           "(README, 'On a JupyterHub')")
    os.chown(folder, entry.pw_uid, entry.pw_gid)
    os.chmod(folder, mode)
    return folder


def socket_url(path: str) -> str:
    """``http+unix://`` and ``path``, every character but lower-case letters, digits and ``-._``
    escaped: JupyterHub's HTTP client lowercases the part of a URL that names the socket."""
    keep = string.ascii_lowercase + string.digits + "-._"
    return "http+unix://" + "".join(chr(b) if chr(b) in keep else f"%{b:02X}" for b in os.fsencode(path))


def peer_uid(peer_port: int, port: int) -> int | None:
    """The account that holds the loopback TCP socket at ``peer_port`` connected to ``port`` (read
    from /proc/net/tcp: loopback TCP carries no credentials), or None if there is none."""
    local, remote = f"0100007F:{peer_port:04X}", f"0100007F:{port:04X}"
    with open("/proc/net/tcp") as fh:
        for fields in map(str.split, fh):
            if fields[1:3] == [local, remote]:
                return int(fields[7])
    return None


async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """One direction of a relayed connection, until either end closes."""
    with contextlib.suppress(OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    sink.close()


async def open_socket(path: str, owner: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the Unix socket at ``path`` if that is a socket of ``owner``'s, never through
    a link: the folder it lies in is its owner's, who could otherwise put there a link to any
    socket root can reach (a container engine's, the proxy's API) for root to connect to. The
    socket is opened once (``O_PATH``), checked, and connected to by that open file; OSError if
    it is no socket of ``owner``'s."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISSOCK(info.st_mode) or info.st_uid != owner:
            raise OSError(errno.EACCES, f"{path} is not a socket of uid {owner}'s")
        return await asyncio.open_unix_connection(f"/proc/self/fd/{fd}")
    finally:
        os.close(fd)


class Relay:
    """127.0.0.1:``port`` (0: one the system picks), bound at once and held by this process until
    :meth:`close`, carrying root's connections to the Unix socket ``path`` of ``owner``'s (a uid);
    any other account's is closed unread, and so is every connection while nothing of ``owner``'s
    listens at ``path`` (the proxy then answers 503)."""

    def __init__(self, path: str, owner: int, port: int = 0) -> None:
        self.path, self.owner = path, owner
        self.listener = socket.create_server((LOOPBACK, port))
        self.port: int = self.listener.getsockname()[1]
        self.server: asyncio.base_events.Server | None = None

    async def serve(self) -> Relay:
        """Start carrying connections (in the running event loop); the relay itself."""
        self.server = await asyncio.start_server(self._connection, sock=self.listener)
        return self

    async def _connection(self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter) -> None:
        if peer_uid(to_client.get_extra_info("peername")[1], self.port) != 0:
            to_client.close()
            return
        try:
            server, to_server = await open_socket(self.path, self.owner)
        except OSError:
            to_client.close()
            return
        await asyncio.gather(pump(client, to_server), pump(server, to_client))

    def close(self) -> None:
        """Give the port back: only once nothing is routed to it any more."""
        if self.server is not None:
            self.server.close()
        self.listener.close()

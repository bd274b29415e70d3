"""What the hub's configuration checks before it starts: each problem stops it with one line
(``sys.exit``) naming what to change, before any student's first login would find it."""

from __future__ import annotations

import asyncio
import errno
import grp
import os
import pwd
import socket
import stat
import sys
import urllib.parse

from autograder.hub.sockets import pump

HELP = "(README, 'On a JupyterHub')"


def starting_hub() -> bool:
    """Whether the configuration is loaded by a hub starting (in its event loop), not by one of
    jupyterhub's subcommands (token, upgrade-db), which start no proxy."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def unreadable(path: str) -> str | None:
    """The first folder or file on the way to ``path`` that other accounts cannot pass, or None."""
    path = os.path.realpath(path)
    parts = [path] + [os.path.dirname(path)]
    while parts[-1] != os.sep:
        parts.append(os.path.dirname(parts[-1]))
    for part in reversed(parts):
        if not os.stat(part).st_mode & stat.S_IXOTH:
            return part
    return None


def require_reachable(*paths: str) -> None:
    """Every server the hub spawns runs the course environment's Python as its user, and reads its
    role's settings from it: an environment under /root or a private home would fail at each
    student's first login."""
    for needed in paths:
        blocked = unreadable(needed)
        if blocked:
            sys.exit(f"error: {needed} is not reachable by other accounts ({blocked} is closed to them): "
                     f"install the course's environment where every account can read it, e.g. /opt {HELP}")


def require_accounts(groups: list[str], accounts: list[str]) -> None:
    for name, kind in [(g, "group") for g in groups] + [(a, "account") for a in accounts]:
        try:
            (grp.getgrnam if kind == "group" else pwd.getpwnam)(name)
        except KeyError:
            sys.exit(f"error: the Unix {kind} {name} does not exist {HELP}")


def require_privileged_port(name: str, port: int) -> None:
    """A port any account can listen on would be a student's to take while the hub's relay is down."""
    with open("/proc/sys/net/ipv4/ip_unprivileged_port_start") as fh:
        if port >= int(fh.read()):
            sys.exit(f"error: {name}={port} is a port any account can listen on: give one below "
                     f"net.ipv4.ip_unprivileged_port_start {HELP}")


def clear_stale_socket(path: str) -> None:
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
        sys.exit(f"error: something already answers on {path}: another hub of this course is running {HELP}")
    finally:
        probe.close()


def hold_other_loopback(bind_url: str | None) -> asyncio.Task | None:
    """With the proxy on one loopback address (``--JupyterHub.bind_url=http://127.0.0.1:8000``),
    the same port of the other (``[::1]:8000``) is free to any account, and ``localhost`` names
    both: a browser on this machine (Chromium tries ``::1`` first), an SSH tunnel or a front end
    that dials ``localhost:8000`` would reach a student's listener there and type its passwords
    into it. The hub holds that port too, for as long as it runs, relaying it to the proxy; one
    already taken stops the hub, saying so."""
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
                 f"localhost:{port}; stop it, or bind the hub elsewhere {HELP}")

    async def relay(client, to_client):
        try:
            server, to_server = await asyncio.open_connection(parts.hostname, port)
        except OSError:
            to_client.close()
            return
        await asyncio.gather(pump(client, to_server), pump(server, to_client))
    return asyncio.get_running_loop().create_task(asyncio.start_server(relay, sock=listener))


def require_roots_code(*paths: str) -> None:
    """A hub running as root runs only code root alone can change: each of ``paths`` (the
    configuration, the ``autograder`` package it imports) and everything below it, and every
    folder above it, root's and writable by nobody else."""
    if os.geteuid() != 0:
        return
    for top in paths:
        found = [top] + [os.path.join(d, n) for d, dirs, files in os.walk(top) for n in dirs + files]
        above = os.path.dirname(os.path.abspath(top))
        while True:
            found.append(above)
            if above == os.sep:
                break
            above = os.path.dirname(above)
        for path in found:
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode) and info.st_uid == 0:
                continue            # root's link (mode 0777 by nature): only root can point it elsewhere
            if info.st_uid != 0 or info.st_mode & 0o022 and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
                try:
                    owner = pwd.getpwuid(info.st_uid).pw_name
                except KeyError:
                    owner = f"uid {info.st_uid}"
                why = f"it is {owner}'s" if info.st_uid != 0 else f"its mode {stat.S_IMODE(info.st_mode):04o} lets others write"
                sys.exit(f"error: the hub runs as root and would run code another account can change ({path}: {why}): "
                         "start it from the copy `make hub` makes, "
                         "-f <environment>/lib/course-hub/deploy/jupyterhub_config.py (docs/tutorials/jupyterhub.md, step 5)")

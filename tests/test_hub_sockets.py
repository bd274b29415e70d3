"""The hub's relay to a server's Unix socket connects to a socket of the server's owner only, never
through a link (autograder/hub/sockets.py): a user's socket folder is the user's, who could put a
link there to any socket root can reach. Milliseconds; tests/test_hub.py runs the same on a hub."""

import asyncio
import os
import socket

import pytest

pytest.importorskip("jupyterhub", reason="JupyterHub is the `hub` extra: `make test` installs it")

from autograder.hub.sockets import open_socket  # noqa: E402


def _listening(path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    return server


def _connects(path, owner):
    async def attempt():
        _, writer = await open_socket(str(path), owner)
        writer.close()
    try:
        asyncio.run(attempt())
    except OSError:
        return False
    return True


def test_the_relay_connects_to_its_owners_socket_and_never_through_a_link(tmp_path):
    target = _listening(tmp_path / "other.sock")
    own = _listening(tmp_path / "server.sock")
    try:
        assert _connects(tmp_path / "server.sock", os.geteuid())
        assert not _connects(tmp_path / "server.sock", os.geteuid() + 1)       # someone else's socket
        os.unlink(tmp_path / "server.sock")
        os.symlink(tmp_path / "other.sock", tmp_path / "server.sock")
        assert not _connects(tmp_path / "server.sock", os.geteuid())           # a link to another socket
        os.unlink(tmp_path / "server.sock")
        (tmp_path / "server.sock").write_text("")
        assert not _connects(tmp_path / "server.sock", os.geteuid())           # no socket
    finally:
        target.close()
        own.close()


def test_the_hub_as_root_runs_no_code_another_account_can_change(tmp_path):
    """Root's hub refuses a configuration or package another account owns or may write (the course
    folder is the grading account's), and runs the copy `make hub` makes (autograder/hub/code_copy.py)."""
    from autograder.hub import code_copy, startup
    if os.geteuid() != 0:
        pytest.skip("the check applies to a hub running as root")
    copy = code_copy.make(str(tmp_path / "code"), course_root=code_copy.SOURCE)
    os.chmod(tmp_path, 0o755)
    config = os.path.join(copy, "deploy", "jupyterhub_config.py")
    startup.require_roots_code(config, os.path.join(copy, "autograder"))          # root's alone: runs
    os.symlink(copy, tmp_path / "linked")                 # root's link on the way (/opt -> /srv/opt)
    startup.require_roots_code(str(tmp_path / "linked" / "deploy" / "jupyterhub_config.py"))
    assert code_copy.course_yaml(copy) == os.path.join(code_copy.SOURCE, "course.yaml")
    assert not os.stat(config).st_mode & 0o022
    for attack in ("owner", "mode"):
        target = os.path.join(copy, "autograder", "hub", "spawner.py")
        if attack == "owner":
            os.chown(target, 65534, 65534)            # nobody: the grading account, say
        else:
            os.chmod(target, 0o666)
        with pytest.raises(SystemExit, match="another account can change"):
            startup.require_roots_code(config, os.path.join(copy, "autograder"))
        os.chown(target, 0, 0)
        os.chmod(target, 0o644)

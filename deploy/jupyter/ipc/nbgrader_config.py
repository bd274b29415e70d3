"""Kernels that nbgrader starts in a server the hub spawned (Validate): over `ipc`, Unix sockets in
the server's runtime folder, which the hub makes its user's alone, as the server's own kernels
(jupyter_server_config.json beside this file). Over TCP any account on the machine could connect
to a kernel's ports, and its iopub channel sends every cell's code and output to any subscriber.
Each load of this file names a connection file of its own there: a relative one would put the
sockets in the kernel's working folder, not where its client looks."""
import os
import uuid

from jupyter_core.paths import jupyter_runtime_dir

c = get_config()  # noqa: F821 - get_config is provided by nbgrader
c.KernelManager.transport = "ipc"
c.KernelManager.connection_file = os.path.join(jupyter_runtime_dir(), f"kernel-{uuid.uuid4()}.json")

"""The course's JupyterHub (deploy/jupyterhub_config.py): the code its settings call.

``sockets``   folders only their owner (and root) can enter, below folders root alone can change;
              Unix-socket URLs; and a relay from a loopback TCP port the hub holds to a Unix
              socket, which carries only root's connections (the proxy's and the hub's)
``spawner``   each user's server on a Unix socket in a folder of their own, which is also their
              Jupyter runtime folder (kernels over `ipc` there), reached through such a relay
``data``      the course's data (the corpus) where every student's server reads it, read-only
``authenticator``  PAM logins, the hub's course groups following the account's Unix groups
``homes``     no server starts in a home other accounts can enter
``startup``   what the configuration checks before the hub starts, each problem one line
"""

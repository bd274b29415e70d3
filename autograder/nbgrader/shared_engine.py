"""One SQLAlchemy engine per gradebook in a process, for every ``Gradebook`` nbgrader opens.

nbgrader opens a new ``Gradebook``, and with it a new engine, for nearly every step: nine times
per notebook at autograde. A new engine starts with an empty cache of compiled statements, so
every one of the hundreds of queries an autograde makes was compiled again, most of the time
autograde spent in the database. Importing this module replaces the ``create_engine`` nbgrader's
``Gradebook`` calls by one that hands back the engine made before for the same URL and arguments.

Each ``Gradebook`` also calls ``create_all``, which asks the database about each of nbgrader's
fourteen tables one at a time; here it asks once for every table's name and creates nothing when
all are there (it is then what ``create_all`` does: tables are only ever created if missing).

Each ``Gradebook`` still has a session of its own, committed as nbgrader commits it; its ``close``
still disposes the engine's pool, so no connection outlives it (a gradebook file deleted and made
again is opened afresh), while the engine and its cache stay. An engine is safe to share between
threads (formgrader's), and disposing it leaves a connection another ``Gradebook`` holds working;
a forked process (the gradebook stage's workers) starts with no connection of its parent's.
"""

import os
import threading
from typing import Any

import nbgrader.api
from sqlalchemy import create_engine, inspect
from sqlalchemy.engine import URL, Engine

_ENGINES: dict[tuple[str, str], Engine] = {}
_LOCK = threading.Lock()


def shared(url: str | URL, **kwargs: Any) -> Engine:
    """The process's engine for ``url`` and ``kwargs`` (made by ``create_engine`` the first time)."""
    name = url.render_as_string(hide_password=False) if isinstance(url, URL) else str(url)
    key = (name, repr(sorted(kwargs.items())))
    with _LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = create_engine(url, **kwargs)
    return engine


nbgrader.api.create_engine = shared


def _forget_connections() -> None:
    """In a forked process: its own connections, never the parent's (SQLAlchemy's rule for a fork)."""
    for engine in _ENGINES.values():
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_connections)
_create_all = nbgrader.api.Base.metadata.create_all


def create_missing(bind: Engine, **kwargs: Any) -> None:
    """``create_all``, with one question to the database when every table is there already."""
    if set(nbgrader.api.Base.metadata.tables) <= set(inspect(bind).get_table_names()):
        return
    _create_all(bind=bind, **kwargs)


nbgrader.api.Base.metadata.create_all = create_missing

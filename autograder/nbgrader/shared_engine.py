"""One SQLAlchemy engine per gradebook in a process, for every ``Gradebook`` nbgrader opens.

nbgrader opens a new ``Gradebook``, and with it a new engine, for nearly every step: nine times
per notebook at autograde. A new engine starts with an empty cache of compiled statements, so
every one of the hundreds of queries an autograde makes was compiled again, most of the time
autograde spent in the database. Importing this module replaces the ``create_engine`` nbgrader's
``Gradebook`` calls by one that hands back the engine made before for the same URL and arguments.

Each ``Gradebook`` also calls ``create_all``, which asks the database about each of nbgrader's
fourteen tables one at a time; here it asks once for every table's name and creates nothing when
all are there (it is then what ``create_all`` does: tables are only ever created if missing).

Each ``Gradebook`` still has a session of its own, committed as nbgrader commits it; outside a run
(below) its ``close`` still disposes the engine's pool, so no connection outlives it (a gradebook
file deleted and made again is opened afresh), while the engine and its cache stay. An engine is safe to share between
threads (formgrader's), and disposing it leaves a connection another ``Gradebook`` holds working;
a forked process (the gradebook stage's workers) starts with no connection of its parent's.

Within :func:`held` (one autograde or generate_feedback run), a ``Gradebook``'s close leaves its
connection in the pool for the next, and what every ``Gradebook`` asks on opening (are nbgrader's
tables there, is the course there) is asked once an engine: otherwise nine connections a notebook
are made and torn down, on PostgreSQL each a server process started. Leaving the run closes the
pooled connections, so between runs no connection is left open.
"""

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import nbgrader.api
from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import URL, Engine
from sqlalchemy.engine.reflection import Inspector

_ENGINES: dict[tuple[str, str], Engine] = {}
_LOCK = threading.Lock()
_held = 0                                    # how many held() are open in this process
_COMPLETE: dict[Engine, Inspector] = {}      # while held: engines with every table, their answer kept
_COURSES: set[tuple[Engine, str]] = set()    # while held: the courses known to be in each
_FILES: dict[Engine, tuple[int, int] | None] = {}    # the file each engine's last connection opened


def shared(url: str | URL, **kwargs: Any) -> Engine:
    """The process's engine for ``url`` and ``kwargs`` (made by ``create_engine`` the first time)."""
    name = url.render_as_string(hide_password=False) if isinstance(url, URL) else str(url)
    key = (name, repr(sorted(kwargs.items())))
    with _LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = create_engine(url, **kwargs)
            event.listen(engine, "connect", lambda *args: _FILES.__setitem__(engine, _file(engine)))
        if _held:
            _opened_afresh_if_replaced(engine)
    return engine


def _file(engine: Engine) -> tuple[int, int] | None:
    """The device and inode of a SQLite gradebook's file (None when it is missing or not a file)."""
    path = engine.url.database if engine.url.get_backend_name() == "sqlite" else None
    try:
        found = os.stat(path) if path and path != ":memory:" else None
    except OSError:
        return None
    return (found.st_dev, found.st_ino) if found else None


def _opened_afresh_if_replaced(engine: Engine) -> None:
    """While held: a SQLite gradebook deleted or replaced since its last connection was made
    is opened afresh, as outside a run (a kept connection would write to the file that is gone)."""
    if engine in _FILES and _FILES[engine] != _file(engine):
        engine.dispose()
        del _FILES[engine]
        _COMPLETE.pop(engine, None)
        _COURSES.difference_update({key for key in _COURSES if key[0] is engine})


nbgrader.api.create_engine = shared


def _forget_connections() -> None:
    """In a forked process: its own connections, never the parent's (SQLAlchemy's rule for a fork)."""
    for engine in _ENGINES.values():
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_connections)
_create_all = nbgrader.api.Base.metadata.create_all


def tables(bind: Engine) -> Inspector:
    """``inspect(bind)``, for its table names: while held, the answer of a gradebook with every
    table is kept (one with tables missing is asked again, as nbgrader is about to make them)."""
    found = _COMPLETE.get(bind)
    if found is None:
        found = inspect(bind)
        if _held and set(nbgrader.api.Base.metadata.tables) <= set(found.get_table_names()):
            _COMPLETE[bind] = found
    return found


def create_missing(bind: Engine, **kwargs: Any) -> None:
    """``create_all``, with one question to the database when every table is there already."""
    if set(nbgrader.api.Base.metadata.tables) <= set(tables(bind).get_table_names()):
        return
    _create_all(bind=bind, **kwargs)


_check_course = nbgrader.api.Gradebook.check_course


def check_course(self: nbgrader.api.Gradebook, course_id: str = "default_course", **kwargs: Any) -> Any:
    """nbgrader's ``check_course`` (find the course, or add it, and commit); while held, a course
    found before is not asked again and None comes back. Its one caller in nbgrader, a
    ``Gradebook`` opening, reads nothing of the answer, and asking costs a connection's turn."""
    key = (self.engine, course_id)
    if key in _COURSES and not kwargs:
        return None
    found = _check_course(self, course_id, **kwargs)
    if _held:
        _COURSES.add(key)
    return found


def close(self: nbgrader.api.Gradebook) -> None:
    """nbgrader's ``close``: the session ended, and the engine's pool closed unless held."""
    self.db.remove()
    if not _held:
        self.engine.dispose()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Within: connections kept between Gradebooks, and the tables and course asked once an engine."""
    global _held
    with _LOCK:
        _held += 1
    try:
        yield
    finally:
        with _LOCK:
            _held -= 1
            if not _held:
                _COMPLETE.clear()
                _COURSES.clear()
                for engine in _ENGINES.values():
                    engine.dispose()


nbgrader.api.Base.metadata.create_all = create_missing
nbgrader.api.inspect = tables
nbgrader.api.Gradebook.check_course = check_course
nbgrader.api.Gradebook.close = close

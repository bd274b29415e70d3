"""formgrader reads the gradebook as it is now, on every request.

formgrader keeps one gradebook session for the life of its server, while ``course grade``,
``nbgrader autograde`` and ``course export`` change the gradebook from other processes. A session
that has read a grade goes on showing it as it was read (a hand grade flagged for the TA to
confirm after a resubmission shows as graded), and a save that sets a value the session already
holds writes nothing: the TA's confirmation of a flagged hand grade was lost until a second save.
Each request now begins by ending the session's last transaction (nothing is pending between
requests: every handler that writes commits), so it reads the gradebook afresh and a save is
compared with what is there.
"""

from typing import Any


def install() -> None:
    """Make each formgrader request read the gradebook afresh (once per request)."""
    from nbgrader.server_extensions.formgrader import base
    if getattr(base.BaseHandler, "_reads_afresh", False):
        return
    kept = base.BaseHandler.gradebook

    def gradebook(self: Any) -> Any:
        gb = kept.fget(self)
        if not self.__dict__.get("_gradebook_read"):
            gb.db.rollback()
            self._gradebook_read = True
        return gb
    base.BaseHandler.gradebook = property(gradebook, doc="formgrader's gradebook, read afresh by each request")
    base.BaseHandler._reads_afresh = True

"""nbgrader in students' and TAs' own servers: the course's exchange and id, which the hub
(deploy/jupyterhub_config.py) passes to every server it spawns, and hand-ins private to their
student and the instructor. Without the hub, copy this file to /etc/jupyter/nbgrader_config.py
and write the exchange's root and the course id in place of the two environment variables.

nbgrader's submit leaves each hand-in folder writable by every account (0777, "so the
instructor can delete later"): a classmate who learns its name (submit prints it) could read its
submission secret and so its released feedback, put files in it, replace its notebook or make it
late. Here the folder is then made 0770: its student's, and the group of the exchange's
``inbound/`` (``2733``, so every hand-in takes its group: the instructor's own), nobody else's."""
import os

from nbgrader.exchange.default.submit import ExchangeSubmit

c = get_config()  # noqa: F821 - get_config is provided by nbgrader
c.Exchange.root = os.environ["COURSE_EXCHANGE_ROOT"]
c.CourseDirectory.course_id = os.environ["COURSE_ID"]


class PrivateSubmit(ExchangeSubmit):
    """nbgrader's submit, the hand-in then its student's and the instructor's alone."""

    def copy_files(self) -> None:
        super().copy_files()
        os.chmod(os.path.join(self.inbound_path, self.assignment_filename), 0o770)


c.ExchangeFactory.submit = PrivateSubmit

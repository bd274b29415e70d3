"""nbgrader in students' and TAs' own servers: the course's exchange and id, which the hub
(deploy/jupyterhub_config.py) passes to every server it spawns. Without the hub, the same two
settings go in /etc/jupyter/nbgrader_config.py."""
import os

c = get_config()  # noqa: F821 - get_config is provided by nbgrader
c.Exchange.root = os.environ["COURSE_EXCHANGE_ROOT"]
c.CourseDirectory.course_id = os.environ["COURSE_ID"]

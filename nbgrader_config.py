"""nbgrader's configuration for this course: everything comes from course.yaml.

`solutions/` is nbgrader's source directory and `assignments/` its release
directory; see autograder/nbgrader_bridge.py.
"""
from autograder.nbgrader_bridge import configure

configure(get_config())  # noqa: F821 - get_config is provided by nbgrader

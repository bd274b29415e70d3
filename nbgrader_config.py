"""nbgrader's configuration for this course: everything comes from course.yaml.

`solutions/` is nbgrader's source directory and `assignments/` its release
directory; see autograder/nbgrader/settings.py.
"""
import os

from autograder.nbgrader.settings import configure

configure(get_config(),  # noqa: F821 - get_config is provided by nbgrader
          course_yaml=os.path.join(os.path.dirname(os.path.abspath(__file__)), "course.yaml"))

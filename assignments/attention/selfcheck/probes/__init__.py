"""Measurements that run beside the student's code and return plain data only.

A probe never judges: it returns what it measured (answers, arrays, losses,
gradients), and every comparison that decides a score is made by the grader.
``tests/test_probes.py`` holds every probe to that.
"""

"""Probes measure; the grader judges.

A probe runs in the student's process, where the student's code may have
replaced anything (numpy's comparisons, the probe itself). So a probe may
only return what it measured, and every comparison that decides a score is
made by the grader on that plain data. These tests hold every probe module to
that rule, and show the rule at work with numpy's comparisons patched.
"""

import ast
import glob
import os

import pytest

from selfcheck import probes

PROBES = sorted(glob.glob(os.path.join(os.path.dirname(probes.__file__), "*.py")))
COMPARING = {"allclose", "isclose", "array_equal", "array_equiv", "equal", "not_equal", "less",
             "greater", "less_equal", "greater_equal"}


@pytest.mark.parametrize("path", PROBES, ids=os.path.basename)
def test_probes_never_compare_values(path):
    """No probe compares two values (==, <, np.allclose, np.testing...): it could be lied to."""
    with open(path) as fh:
        tree = ast.parse(fh.read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Attribute) and (node.attr in COMPARING or node.attr.startswith("assert_")
                                                or node.attr == "testing"):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert not found, "a probe compares values; return the values and compare in the check:\n" + "\n".join(found)

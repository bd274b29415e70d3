"""Grading hand-ins: finding them, running each part's suites in a sandbox, in a batch."""

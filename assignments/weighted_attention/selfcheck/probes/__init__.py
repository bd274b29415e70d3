"""Check helpers that run beside the student's code and return plain data only."""

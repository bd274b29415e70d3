"""The files grades leave the course in: parts.csv, totals.csv, Gradescope, Canvas, Moodle."""

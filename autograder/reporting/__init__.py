"""What grading hands back: the exports, what a run prints, the feedback pages and the cohort report."""

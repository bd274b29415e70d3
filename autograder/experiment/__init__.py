"""The reference projection-removal experiment: its runs, summaries and figure."""

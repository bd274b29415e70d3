"""The catalogue of known mistakes, made into submissions and graded (the mutation check)."""

"""Lets `pytest` here run the public checks against the notebook in this folder."""

pytest_plugins = ["selfcheck.plugin"]

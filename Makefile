# The two commands of the README: `make demo` (the main job) and `make test`.
# Each creates or reuses .venv and installs what it needs.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test release bench experiment clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/course demo

test: $(STAMP)
	$(BIN)/python -m pytest tests

release: $(STAMP)
	$(BIN)/course release

# Seconds per submission of `course grade --jobs 1` and `--jobs N` against plain
# `nbgrader autograde` on the same synthetic cohort, and the self-check's wall time.
bench: $(STAMP)
	$(BIN)/python bench/grading.py

clean:
	rm -rf demo artifacts results reports autograded submitted feedback gradebook.db grades.csv \
	  totals.csv gradescope nbgrader-grades.csv

# The two commands of the README: `make demo` (the main job) and `make test`.
# Each creates or reuses .venv and installs what it needs.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# the tests and the benchmark also grade on Dask, keep a gradebook on PostgreSQL, drive
# Chromium through Playwright (the system's browser: it downloads none) and run a JupyterHub
EXTRAS := $(VENV)/.installed-extras
HUB    := $(VENV)/.installed-hub
# the type checker and pytest-xdist, for `make check` and `make test`
CHECK  := $(VENV)/.installed-check
# Sphinx, MyST and the PyData theme, for `make docs` (and so `make check`)
DOCS   := $(VENV)/.installed-docs

.PHONY: demo test check docs docs-links release bench experiment clean sandbox postgres browser hub proxy

$(STAMP): pyproject.toml autograder/lazy_iri.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@$(BIN)/python -c "from autograder import lazy_iri; lazy_iri.install()"   # nbgrader starts faster
	@touch $(STAMP)

$(EXTRAS): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[cluster,postgres,test,hub,check,docs]'
	@touch $(EXTRAS) $(CHECK) $(DOCS)

$(CHECK): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[check]'
	@touch $(CHECK)

$(DOCS): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	@touch $(DOCS)

# The course on a JupyterHub (deploy/jupyterhub_config.py): JupyterHub from PyPI, and its proxy,
# configurable-http-proxy, from npm into the same environment (the configuration finds it there).
# `make hub VENV=/opt/attention-course PYTHON=/usr/bin/python3` builds that environment where
# every account can read it (docs/tutorials/jupyterhub.md), and copies the code root's hub runs into
# $(VENV)/lib/course-hub, root's alone (autograder/hub/code_copy.py): run it again after the course's
# code changes. Without npm the hub test is skipped.
$(HUB): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[hub]'
	@touch $(HUB)

hub: $(HUB) proxy
	$(BIN)/python -m autograder.hub.code_copy $(VENV)/lib/course-hub

proxy:
	@test -x $(BIN)/configurable-http-proxy || \
	  { command -v npm >/dev/null 2>&1 && npm install --global --silent --prefix $(VENV) configurable-http-proxy@5; } || \
	  echo "NO PROXY: npm is not installed; install Node.js and npm, then make hub"

demo: $(STAMP) sandbox
	$(BIN)/course demo

# bubblewrap isolates students' code at grading (autograder/sandbox/); installed here when
# we are root on Debian/Ubuntu, otherwise grading says it runs in a WEAKER MODE.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; }; }; } || \
	  echo "WEAKER MODE: bubblewrap (bwrap) is not installed; install it to isolate students' code"

# PostgreSQL's server, for the test of a gradebook on it (tests/test_postgres.py): installed here
# when we are root on Debian/Ubuntu, otherwise that test says why it skips.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -qq postgresql >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq postgresql >/dev/null 2>&1; }; }; } || \
	  echo "PostgreSQL is not installed: the PostgreSQL gradebook test will skip"

# Debian's Chromium for the browser tests (tests/test_browser.py), installed like bubblewrap;
# without it those tests are skipped and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; }; }; } || \
	  echo "NO BROWSER: chromium is not installed; the browser tests will be skipped"

# Two processes, a test file each at a time, the longest files first (tests/conftest.py): the
# slow files wait on timeouts, browsers and accounts as much as they compute; the 20 slowest
# tests are listed at the end. The documentation is built first (`make docs`), so that CI, which
# runs `make test`, fails on a broken page too.
test: $(EXTRAS) sandbox postgres browser proxy docs
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=20 tests

# The fast tests only (no kernels or graded cohorts), the type check and the documentation
# (`make docs`, incremental): under 30 seconds, for every edit. Two processes: the type check,
# which takes most of that in a fresh clone (no .mypy_cache yet), runs beside the rest.
check: $(CHECK) docs
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not slow" tests

# The documentation site (docs/, Sphinx with MyST Markdown and the PyData theme) into
# docs/_build/html; open docs/_build/html/index.html. Every warning is an error (-W, all of them
# reported: --keep-going), and so is every cross-reference or internal link whose target is
# missing (-n, nitpicky; MyST checks links to pages, headings and files). The reference pages are
# made from the code (docs/_ext/course_reference.py), and Sphinx reads a page again when a file it
# was made from changes, so the build is incremental (about a second when nothing changed).
# External links are not checked here: `sphinx-build -b linkcheck` needs the network, which
# neither this machine nor CI has; run `make docs-links` where there is one.
docs: $(DOCS)
	$(BIN)/sphinx-build -q -W --keep-going -n -b html docs docs/_build/html

docs-links: $(DOCS)
	$(BIN)/sphinx-build -q -W --keep-going -n -b linkcheck docs docs/_build/linkcheck

release: $(STAMP)
	$(BIN)/course release

# Seconds per submission of `course grade --jobs 1` and `--jobs N` against plain
# `nbgrader autograde` on the same synthetic cohort, then on one and two local Dask workers
# (scaling efficiency, overhead against local), the self-check's wall time and each part against
# its floor. Then a term of 60, 600 and 2,000 students (bench/term.py): every stage after grading, a
# one-student regrade, `course status` and `course history`, how each grows, on SQLite and PostgreSQL.
# Last, one training step of the weighted-attention model, the course framework against PyTorch eager
# (when torch is installed: $(BIN)/pip install torch, CPU wheel; never a dependency);
# `make bench TORCH_SITE=DIR` takes torch from another environment's site-packages (bench/train_step.py).
bench: $(EXTRAS) sandbox postgres
	$(BIN)/python bench/grading.py
	$(BIN)/python bench/term.py
	TORCH_SITE=$(TORCH_SITE) $(BIN)/python bench/train_step.py

# The chapter's projection-removal experiment: every variant, 2 epochs, 3 seeds, 2 processes
# (about 25 minutes here), with a progress bar; results and plots in data/, the notebook's
# summary in solutions/weighted_attention/reference_results.json. Runs already done are kept.
experiment: $(STAMP)
	$(BIN)/course experiment --jobs 2

# Everything made here that .gitignore ignores, the environment, caches and corpus aside: every
# file grading writes (autograder.pipeline.OUTPUTS) and CLEANED (tests/test_docs.py holds the three
# together). A folder where a term is graded in place holds its hand-ins and results (submitted/,
# exchange/, results/; the gradebook beside them may be PostgreSQL's): there it refuses, saying what
# it would delete, unless FORCE=1. The gradebook.db `make demo`'s release leaves holds no hand-in.
CLEANED := docs/_build docs/reference/generated demo artifacts exchange feedback gradebook.db* .release-*

clean:
	@paths="$(CLEANED) $$($(BIN)/python -c \
	  "from autograder.pipeline import OUTPUTS; print(*sorted({o.path.split('/')[0] for o in OUTPUTS}))")" && \
	if [ -z "$(FORCE)" ] && { [ -e submitted ] || [ -e exchange ] || [ -e results ]; }; then \
	  echo "make clean: refused, this folder holds a term (submitted/, exchange/ or results/); it would" \
	    "delete $$(ls -d $$paths 2>/dev/null | sort -u | tr '\n' ' ')(make clean FORCE=1 deletes them)" >&2; exit 1; fi; \
	echo rm -rf $$paths; rm -rf $$paths

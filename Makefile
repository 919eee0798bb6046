# The two quickstart commands: `make demo` and `make test`. Each installs what it needs
# into .venv (Python 3.11+ required) the first time: `demo` the program alone, `test` the
# program with the test extra (pytest, ruff, mkdocs, a browser driver, ...).
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test test-postgres lint docs install install-runtime clean

# The program and what it needs at run time.
$(VENV)/.runtime: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "rhythm-bridge needs Python 3.11 or newer (set PYTHON=python3.11)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

# The same plus the test extra, for the tests, the linter and the docs.
$(VENV)/.installed: $(VENV)/.runtime
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@touch $@

install-runtime: $(VENV)/.runtime

install: $(VENV)/.installed

demo: $(VENV)/.runtime
	$(BIN)/rhythm-bridge demo

test: $(VENV)/.installed
	$(BIN)/python -m pytest

# The same tests against a real PostgreSQL server (Debian's package; started and stopped here).
test-postgres: $(VENV)/.installed
	.ci/with-postgres $(BIN)/python -m pytest -m "not sqlite_only"

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The documentation site from docs/ (mkdocs.yml; strict: a broken link or nav entry fails).
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build site *.egg-info

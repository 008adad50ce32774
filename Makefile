# The two set-up commands: `make run` (the app) and `make test` (the tests).
# Each creates .venv and installs what it needs on a fresh machine. `make test-fast` is the edit
# loop: no browser, no real embedder. Tests that need the public-domain corpus (../shared/corpus or
# $EVAL_CORPUS_DIR) or a Chromium skip without them; REQUIRE_CORPUS=1 / REQUIRE_BROWSER=1 fail instead.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: run test test-fast lint bench clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) scripts/strip_debug_info.py
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# `make run PORT=7861` serves on another port (PORT is also read from the environment / .env).
run: $(VENV)/.runtime
	$(PY) app.py $(if $(PORT),--port $(PORT))

test: $(VENV)/.dev
	bash scripts/ensure-chromium.sh
	$(PY) -m pytest

test-fast: $(VENV)/.dev
	$(PY) -m pytest -m "not browser and not slow"

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(VENV)/.runtime
	$(PY) bench/graph_overhead.py

clean:
	rm -rf $(VENV)

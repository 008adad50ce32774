# The two set-up commands: `make run` (the app) and `make test` (the tests).
# Each creates .venv and installs what it needs on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python

.PHONY: run test lint bench clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.runtime
	$(PY) app.py

test: $(VENV)/.dev
	bash scripts/ensure-chromium.sh
	$(PY) -m pytest

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .

bench: $(VENV)/.runtime
	$(PY) bench/graph_overhead.py

clean:
	rm -rf $(VENV)

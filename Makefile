# Two commands: `make demo` (set up + run the main job) and `make test` (set up + run the tests).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP_FLAGS ?= -q --disable-pip-version-check

.PHONY: demo test test-fast bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Stamp files re-install when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install $(PIP_FLAGS) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install $(PIP_FLAGS) -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python -m spade_rllib.train --config tune_configs/quickstart.yaml

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -ra

# Skips the tests marked `ray` (shared Ray session, multi-node cluster): a quicker inner loop.
test-fast: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -m "not ray"

bench: $(VENV)/.installed
	$(BIN)/python bench/env_speed.py
	$(BIN)/python bench/train_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

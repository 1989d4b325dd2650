# Two commands: `make demo` (set up + run the main job) and `make test` (set up + run the tests).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP_FLAGS ?= -q --disable-pip-version-check

.PHONY: demo test test-fast lint bench clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Stamp files re-install when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install $(PIP_FLAGS) -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install $(PIP_FLAGS) -e '.[dev,trackers,search,tensorboard,foreign,openspiel]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/python -m spade_rllib.train --config tune_configs/quickstart.yaml

# The report's browser test (tests/test_report.py) renders in headless Chromium: install the Debian
# package where apt-get can (root, or passwordless sudo); elsewhere the test skips and says why.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	    command -v google-chrome >/dev/null 2>&1 || [ -n "$$CHROMIUM" ]; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	    echo "note: apt-get could not install chromium; the browser test will skip"; \
	elif command -v apt-get >/dev/null 2>&1 && sudo -n true 2>/dev/null; then \
	    (sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) || \
	    echo "note: apt-get could not install chromium; the browser test will skip"; \
	else echo "note: no Chromium and no apt-get as root; the browser test will skip"; fi

# The linter first (seconds; its rule selection and why: [tool.ruff] in pyproject.toml), then the suite on
# PYTEST_WORKERS pytest-xdist workers, a test file at a time (`--dist loadfile`: a file's module-scoped fixtures,
# e.g. one trained league, are built once). Each worker is its own pytest session with its own Ray
# (tests/conftest.py's `ray_session`). `--dist loadgroup` would keep every Ray test on one worker, but pytest-xdist
# 3.8 does not group under pytest 9 (it renames `item._nodeid`, which pytest 9 no longer reads). PYTEST_WORKERS=0:
# one process, as before. `--no-loadscope-reorder`: the files start in tests/conftest.py's order (HEAVY_FIRST).
PYTEST_WORKERS ?= 2
test: $(VENV)/.installed-dev browser lint
	$(BIN)/python -m pytest -q -ra --durations=25 $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .

# Skips the tests marked `ray` (shared Ray session, multi-node cluster): a quicker inner loop.
test-fast: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q -m "not ray" $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder)

bench: $(VENV)/.installed
	$(BIN)/python bench/speed/env_speed.py
	$(BIN)/python bench/speed/train_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# gpu-wizard developer entry points. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test lint typecheck system-deps bench clean data

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed

## demo: install and run the wizard on the built-in demo cluster
demo: $(VENV)/.installed
	$(BIN)/gpu-wizard --demo sle-micro-precompiled

## system-deps: Debian packages the tests need (docker-registry, skopeo, umoci, htpasswd)
system-deps:
	bash .ci/system-deps.sh

## test: install test extras and system packages, then run the whole suite
test: $(VENV)/.installed-test system-deps
	$(BIN)/python -m pytest -n auto -q $(PYTEST_ARGS)

## data: regenerate the JSON twins of the bundled operator YAML (read at run time; a test checks they are current)
data: $(VENV)/.installed
	$(BIN)/python -m wizard.bundled

lint: $(VENV)/.installed-test
	$(BIN)/ruff check wizard screens tests benchmarks
	$(BIN)/ruff format --check wizard screens tests benchmarks
	$(BIN)/lint-imports

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache .mypy_cache

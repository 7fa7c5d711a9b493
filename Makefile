# gpu-wizard developer entry points. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`: twice the CPUs up to 4 CPUs, else one per CPU. The suite mostly waits
# (demo rollouts, the TUI's timers, subprocesses): its tests use a CPU for about a third to a half of their wall
# time, so on 2 cores 2 workers left them idle half the time; 4 took the same CPU in half the wall (docs/benchmarks.md).
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); if [ $$n -le 4 ]; then echo $$((2 * n)); else echo $$n; fi)

.PHONY: demo test test-real real-cluster lint typecheck system-deps bench clean data

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
demo: export PYTHONDONTWRITEBYTECODE :=
demo: $(VENV)/.installed
	$(BIN)/gpu-wizard --demo sle-micro-precompiled

## system-deps: Debian packages the tests need (docker-registry, skopeo, umoci, htpasswd)
system-deps:
	bash .ci/system-deps.sh

## test: install test extras and system packages, then run the whole suite and the real-cluster lane
# Bytecode is written (into __pycache__, ignored by git) even where the environment says not to: without it every
# CLI a test starts compiled ~110 modules (0.3 s of CPU) and every pytest worker rewrote each test module again.
test: export PYTHONDONTWRITEBYTECODE :=
test: $(VENV)/.installed-test system-deps
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -q $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-real

## test-real: the real-cluster lane (kube-apiserver, etcd, kcm, scheduler, kwok and the real GPU Operator,
## built from pinned Go modules into ~/.cache/gpu-wizard/realcluster; the first build takes long, see README)
test-real: export PYTHONDONTWRITEBYTECODE :=
test-real: $(VENV)/.installed-test
	@if command -v go >/dev/null 2>&1; then \
		$(BIN)/python -m tests.realcluster.build >/dev/null && \
		GPU_WIZARD_REALCLUSTER=1 $(BIN)/python -m pytest -q -p no:xdist --timeout=900 \
			--junitxml=$(CURDIR)/.ci/last-run/junit-realcluster.xml tests/realcluster $(PYTEST_ARGS); \
	elif [ "$$CI" = "true" ]; then \
		echo "test-real: go is not installed, so the real-cluster lane cannot run (CI=true: failing)" >&2; exit 1; \
	else \
		echo "test-real: REAL-CLUSTER LANE SKIPPED: go is not installed" >&2; \
	fi

## real-cluster: the lane's cluster in the foreground (RELEASE=v26.3.3 NODES=nodes.json); Ctrl-C stops it
## (OPERATOR=none: no CRDs nor operator; the operator runs once a helm install creates the chart's Deployment;
##  REACHABLE=harbor.corp.example: the only registry hosts the nodes pull from, others fail as ImagePullBackOff)
RELEASE ?=
NODES ?= assets/examples/sle-micro-precompiled.nodes.json
OPERATOR ?=
REACHABLE ?=
real-cluster: $(VENV)/.installed-test
	$(BIN)/python -m tests.realcluster $(if $(RELEASE),--release $(RELEASE)) --nodes $(NODES) $(if $(OPERATOR),--operator $(OPERATOR)) $(if $(REACHABLE),--reachable $(REACHABLE))

## data: regenerate the JSON twins of the bundled operator YAML, advice and catalog (read at run time; a test checks they are current)
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

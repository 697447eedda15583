# scsparse — two commands do all the set-up on a fresh machine: `make demo` and `make test`.
#
# The environment is locked: `requirements-py3.X.txt` pins every dependency for Python 3.X (made by `make lock`
# from pyproject.toml) and is applied as a constraints file, so a fresh clone installs exactly the versions the
# test suite passed with. torch and its CUDA runtime are left out of the locks and come from TORCH_SPEC.
#   make test                        Python from PYTHON (default python3), venv .venv
#   make PYTHON=python3.12 test      venv .venv-python3.12, lock requirements-py3.12.txt
#   make test-latest                 the newest versions pyproject.toml allows, in a venv of their own
PYTHON ?= python3
TORCH_SPEC ?= torch==2.13.0
LOCKED_PYTHONS := 3.11 3.12

# The interpreter: PYTHON itself, or where pyenv holds a version that provides it but does not make it global.
PY := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null || \
	{ v=$$(pyenv whence $(PYTHON) 2>/dev/null | tail -n 1); \
	  test -n "$$v" && echo "$$(pyenv root)/versions/$$v/bin/$(PYTHON)"; })
ifeq ($(PY),)
$(error No Python interpreter '$(PYTHON)': install it or name another, e.g. make PYTHON=python3.11 test)
endif
PY_VERSION := $(shell $(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
LOCK := requirements-py$(PY_VERSION).txt

VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(notdir $(PYTHON)))
BIN := $(VENV)/bin
STAMP := $(VENV)/.scsparse-installed
LATEST_VENV ?= .venv-latest-py$(PY_VERSION)

# Real data for tests and benchmarks: ../shared/data when it exists (never downloaded at test time).
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)),)
export SCSPARSE_DATA_DIR ?= $(SHARED_DATA)
endif
export SCSPARSE_OFFLINE ?= 1
# Without a data copy, `bench all --quick` records the benchmarks on real data as "not run" instead of failing.
BENCH_DATA_FLAG := $(if $(SCSPARSE_DATA_DIR),,--skip-missing-data)
export PYTHONUNBUFFERED := 1

.PHONY: install test test-latest demo lint lock bench bench-quick bench-synthetic clean docs docs-check

$(LOCK):
	@echo "No lock file for Python $(PY_VERSION) ($(LOCK)); locked: $(LOCKED_PYTHONS)." >&2
	@echo "Use one of those (make PYTHON=python3.12 ...) or add $(PY_VERSION) to LOCKED_PYTHONS and run make lock." >&2
	@exit 1

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c $(LOCK) "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -c $(LOCK) -e ".[test,docs,peers,bench]"
	touch $(STAMP)

install: $(STAMP)

# Lint, the test suite and every benchmark with its small settings. The tests run on TEST_WORKERS processes
# (pytest-xdist; each test trains on one torch thread, so "auto", one per CPU core, keeps every core busy), the
# quick benchmarks BENCH_JOBS at a time (one per core by default; each trains on one thread). QUICK_BENCHMARKS=0
# leaves the quick benchmarks out (the suite has a quick test of each): CI runs them on one Python only.
TEST_WORKERS ?= auto
BENCH_JOBS ?= $(shell $(PY) -c 'import os; print(os.cpu_count() or 1)')
QUICK_BENCHMARKS ?= 1
define run_checks
	$(1)/ruff check scsparse tests
	$(1)/ruff format --check scsparse tests
	$(1)/python -m pytest -q -n $(TEST_WORKERS)
	$(if $(filter 1,$(QUICK_BENCHMARKS)),$(1)/scsparse bench all --quick --jobs $(BENCH_JOBS) --out bench_out/quick-py$(PY_VERSION) $(BENCH_DATA_FLAG),@echo "quick benchmarks left out (QUICK_BENCHMARKS=$(QUICK_BENCHMARKS))")
endef

test: $(STAMP)
	$(call run_checks,$(BIN))

# Drift: the suite on the newest releases pyproject.toml allows (no lock), in a venv of its own.
test-latest:
	rm -rf $(LATEST_VENV)
	$(PY) -m venv $(LATEST_VENV)
	$(LATEST_VENV)/bin/python -m pip install -q --upgrade pip
	$(LATEST_VENV)/bin/python -m pip install -q "$(TORCH_SPEC)"
	$(LATEST_VENV)/bin/python -m pip install -q -e ".[test,docs,peers,bench]"
	$(LATEST_VENV)/bin/python -m pip freeze --exclude-editable > $(LATEST_VENV)/installed.txt
	$(call run_checks,$(LATEST_VENV)/bin)

# Re-resolve every lock from pyproject.toml (uv, from PyPI) for Linux x86_64. The torch that the resolution
# assumes is TORCH_SPEC's; torch, triton and the nvidia/cuda wheels are dropped from the output.
lock: $(STAMP)
	$(BIN)/python -m pip install -q "uv>=0.5"
	for v in $(LOCKED_PYTHONS); do \
	  echo "$(TORCH_SPEC)" | $(BIN)/uv pip compile pyproject.toml - --extra test --extra docs --extra peers --extra bench --python-version $$v \
	    --python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock" --quiet \
	    --no-emit-package torch --no-emit-package triton -o requirements-py$$v.txt || exit 1; \
	  awk '/^[^ #]/ { drop = /^(nvidia-|cuda-)/ } !drop' requirements-py$$v.txt > requirements-py$$v.tmp && \
	    mv requirements-py$$v.tmp requirements-py$$v.txt; \
	done

bench-quick: $(STAMP)
	$(BIN)/scsparse bench all --quick --jobs $(BENCH_JOBS) --out bench_out/quick $(BENCH_DATA_FLAG)

bench: $(STAMP)
	$(BIN)/scsparse bench all --out bench_out/full

demo: $(STAMP)
	$(BIN)/scsparse demo --out scsparse_demo

bench-synthetic: $(STAMP)
	$(BIN)/scsparse bench synthetic --rho 0.4 --seeds 5 --out bench_out/synthetic

lint: $(STAMP)
	$(BIN)/ruff check scsparse tests
	$(BIN)/ruff format --check scsparse tests

# The documentation site, offline: the tutorials are executed into docs/tutorials/ (only those whose notebook or
# package source changed; DOCS_QUICK=1: small settings, for a quick look), then Sphinx builds docs/_build/html
# with warnings as errors. docs-check opens the built site in headless Chromium (Debian's chromium and
# chromium-driver) and fails on a missing page, a broken link or image, or a JavaScript error.
DOCS_HTML := docs/_build/html

docs: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python docs/execute_tutorials.py $(if $(DOCS_QUICK),--quick)
	rm -rf docs/api/generated
	$(BIN)/python -m sphinx -E -W --keep-going -b html docs $(DOCS_HTML)

docs-check: docs
	$(BIN)/python tests/docs/site_check.py $(DOCS_HTML) --screenshots docs/_build/screenshots

clean:
	rm -rf scsparse_demo bench_out .pytest_cache

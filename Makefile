# scsparse — two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.scsparse-installed

# Real data for tests and benchmarks: ../shared/data when it exists (never downloaded at test time).
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)),)
export SCSPARSE_DATA_DIR ?= $(SHARED_DATA)
endif
export SCSPARSE_OFFLINE ?= 1
# Without a data copy, `bench all --quick` records the benchmarks on real data as "not run" instead of failing.
BENCH_DATA_FLAG := $(if $(SCSPARSE_DATA_DIR),,--skip-missing-data)
export PYTHONUNBUFFERED := 1

.PHONY: install test demo lint bench bench-quick bench-synthetic clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check scsparse tests
	$(BIN)/ruff format --check scsparse tests
	$(BIN)/python -m pytest -q
	$(BIN)/scsparse bench all --quick --out bench_out/quick $(BENCH_DATA_FLAG)

# Every benchmark with its small settings (part of `make test`) or its full settings (hours on a CPU).
bench-quick: $(STAMP)
	$(BIN)/scsparse bench all --quick --out bench_out/quick $(BENCH_DATA_FLAG)

bench: $(STAMP)
	$(BIN)/scsparse bench all --out bench_out/full

demo: $(STAMP)
	$(BIN)/scsparse demo --out scsparse_demo

bench-synthetic: $(STAMP)
	$(BIN)/scsparse bench synthetic --rho 0.4 --seeds 5 --out bench_out/synthetic

lint: $(STAMP)
	$(BIN)/ruff check scsparse tests
	$(BIN)/ruff format --check scsparse tests

clean:
	rm -rf scsparse_demo bench_out .pytest_cache

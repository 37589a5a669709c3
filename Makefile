# megamon — the two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test unit chaos reliability lint typecheck bench bench-fleet clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

## demo: a simulated TPU fleet on local API emulators, megamon watching it, a live table.
demo: $(STAMP)
	$(BIN)/python -m internal.demo

## test: create .venv if needed, install megamon with its test extra, lint, type-check and run every test.
test: $(STAMP) lint typecheck
	$(BIN)/pytest

## unit: the pure stages only (no emulator, no process): seconds.
unit: $(STAMP)
	$(BIN)/pytest test/domain test/codec test/config test/observing/test_observers.py test/recording test/summary

## chaos: the fault suite with its long variants (30 s stalls).
chaos: $(STAMP)
	MEGAMON_CHAOS=1 $(BIN)/pytest test/faults

## reliability: run the fault suite and write docs/reliability.md from its output.
reliability: $(STAMP)
	MEGAMON_RELIABILITY_OUT=.reliability.jsonl $(BIN)/pytest test/faults
	$(BIN)/python -m internal.tools.reliability .reliability.jsonl > docs/reliability.md

## lint: ruff, its formatter, and the import contract (pyproject.toml, docs/architecture.md).
lint: $(STAMP)
	$(BIN)/ruff check megamon internal test
	$(BIN)/ruff format --check megamon internal test
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy megamon

## bench: the benchmarks of internal/bench (figures go to README / docs/performance.md).
bench: $(STAMP)
	$(BIN)/python -m internal.bench.summarize
	$(BIN)/python -m internal.bench.eventstore
	$(BIN)/python -m internal.bench.projections

## bench-fleet: megamon against 4k/16k/65k simulated TPU nodes; rewrites docs/performance.md (several minutes, ~8 GB free at L).
bench-fleet: $(STAMP)
	$(BIN)/python -m internal.bench.fleet --size all --reference --write-docs

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache .demo

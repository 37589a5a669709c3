# megamon — the two commands a newcomer needs are `make test` (and, once it exists, `make demo`).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test unit lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

## test: create .venv if needed, install megamon with its test extra, lint, type-check and run every test.
test: $(STAMP) lint typecheck
	$(BIN)/pytest

unit: $(STAMP)
	$(BIN)/pytest test/unit

lint: $(STAMP)
	$(BIN)/ruff check megamon internal test
	$(BIN)/ruff format --check megamon internal test

typecheck: $(STAMP)
	$(BIN)/mypy megamon

## bench: the benchmarks of internal/bench (figures go to README / docs/performance.md).
bench: $(STAMP)
	$(BIN)/python -m internal.bench.summarize
	$(BIN)/python -m internal.bench.eventstore

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache

# megamon — the two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check

.PHONY: demo test faults floor unit chaos reliability lint typecheck bench bench-fleet images bigquery-views clean

# Installs go through uv (from PyPI, into the venv) when it can be had: the same packages from
# the same index as pip, downloaded in parallel and linked from a shared cache, so a warm
# install of the demo takes seconds instead of half a minute. Plain pip is the fallback, for a
# machine where uv cannot be installed or cannot reach the index pip is configured for.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --quiet --disable-pip-version-check uv || echo "uv unavailable: installing with pip"

INSTALL = if [ -x $(BIN)/uv ] && $(BIN)/uv pip install --quiet --python $(BIN)/python -e '$(1)'; \
	then :; else $(BIN)/pip install --quiet --quiet --disable-pip-version-check -e '$(1)'; fi

$(STAMP): $(BIN)/python pyproject.toml
	@$(call INSTALL,.[test])
	touch $(STAMP)

# The demo needs megamon's runtime dependencies only (the emulators are in internal/): not the
# test extra's linters, type checker and kubectl.
$(DEMO_STAMP): $(BIN)/python pyproject.toml
	@$(call INSTALL,.[demo])
	touch $(DEMO_STAMP)

## demo: a simulated TPU fleet on local API emulators, megamon watching it, a live table.
## Each run starts a fresh history; `make demo KEEP=1` continues the previous one.
demo: $(DEMO_STAMP)
	$(BIN)/python -m internal.demo $(if $(KEEP),--keep)

## test: create .venv if needed, install megamon with its test extra, lint, type-check and run
## the unit and integration tests (the fault suite is `make faults`; CI runs both).
test: $(STAMP) lint typecheck
	$(BIN)/pytest --ignore=test/integration/faults
	$(MAKE) --no-print-directory floor

# The fault suite runs its scenarios one at a time: each compares a real megamon's history with
# a clean run's, transition for transition, and two scenarios side by side on a 2-core machine
# leave megamon too little CPU to see the scenario's 3-second states (the clean run missed them).
# One at a time it takes about 9 minutes, so it is a target of its own rather than part of the
# developer's `make test` loop.
## faults: the fault suite (a real megamon against the emulators, once per fault), one scenario at a time.
faults: $(STAMP)
	$(BIN)/pytest test/integration/faults

## floor: the exposition tests against the oldest prometheus-client pyproject.toml allows.
PROMETHEUS_CLIENT_FLOOR = $(shell sed -n 's/.*"prometheus-client>=\([0-9.]*\)".*/\1/p' pyproject.toml)
FLOOR_TESTS = test/publishing/test_exposition.py test/publishing/test_metrics_collector.py test/serving/test_metrics_http.py
floor: $(STAMP)
	rm -rf .floor
	$(BIN)/pip install --quiet --no-deps --target .floor prometheus-client==$(PROMETHEUS_CLIENT_FLOOR)
	PYTHONPATH=.floor $(BIN)/python -c "from importlib.metadata import version; v = version('prometheus-client'); assert v == '$(PROMETHEUS_CLIENT_FLOOR)', v; print('prometheus-client', v)"
	PYTHONPATH=.floor $(BIN)/pytest -q $(FLOOR_TESTS)

## unit: the pure stages only (no emulator, no process): seconds.
unit: $(STAMP)
	$(BIN)/pytest test/domain test/codec test/config test/observing/test_observers.py test/recording test/summary

## chaos: the fault suite with its long variants (30 s stalls).
chaos: $(STAMP)
	MEGAMON_CHAOS=1 $(BIN)/pytest test/integration/faults

## reliability: run the fault suite and write docs/reliability.md from its output.
reliability: $(STAMP)
	MEGAMON_RELIABILITY_OUT=.reliability.jsonl $(BIN)/pytest test/integration/faults
	$(BIN)/python -m internal.tools.reliability .reliability.jsonl > docs/reliability.md

## images: take the pictures of docs/images again, from the real report, in headless Chromium.
images: $(STAMP)
	$(BIN)/python -m internal.tools.report_screenshot --out docs/images/report.png
	$(BIN)/python -m internal.tools.report_screenshot --fleet --out docs/images/fleet.png

## bigquery-views: write deploy/bigquery/views/*.sql from the fleet report's SQL (megamon/fleet/figures_sql.py).
bigquery-views: $(STAMP)
	$(BIN)/python -m internal.tools.bigquery_views

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
	$(BIN)/python -m internal.bench.otlp
	$(BIN)/python -m internal.bench.projections

## bench-fleet: megamon against 4k/16k/65k simulated TPU nodes; rewrites docs/performance.md (several minutes, ~8 GB free at L).
bench-fleet: $(STAMP)
	$(BIN)/python -m internal.bench.fleet --size all --reference --write-docs

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .ruff_cache .demo

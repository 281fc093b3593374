# Works on a fresh machine with Python 3.11+ and make: every target sets up .venv when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: test lint demo bench clean

$(READY): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(READY)

lint: $(READY)
	$(BIN)/ruff check src tests e2e bench
	$(BIN)/ruff format --check src tests e2e bench
	$(BIN)/mypy --strict src

test: lint
	$(BIN)/pytest -n auto tests e2e

demo: $(READY)
	$(BIN)/thirdshift demo

# The benchmarks run in an environment of their own: the project, plus claude-agent-sdk to
# compare against (never a dependency of the project). If the SDK does not install, its row
# is skipped with a note. The test-suite figures use .venv, as `make test` does.
BENCH_VENV := .venv-bench
BENCH_READY := $(BENCH_VENV)/.ready

$(BENCH_READY): pyproject.toml
	test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e .
	$(BENCH_VENV)/bin/python -m pip install --quiet claude-agent-sdk \
		|| echo "bench: claude-agent-sdk did not install; its row will be skipped"
	touch $(BENCH_READY)

bench: $(READY) $(BENCH_READY)
	$(BENCH_VENV)/bin/python bench/run.py --project-python $(BIN)/python

clean:
	rm -rf $(VENV) $(BENCH_VENV) .mypy_cache .pytest_cache .ruff_cache

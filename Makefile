# Works on a fresh machine with Python 3.11+ and make: every target sets up .venv when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: test lint demo bench clean

$(READY): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(READY)

lint: $(READY)
	$(BIN)/ruff check src tests e2e bench
	$(BIN)/ruff format --check src tests e2e bench
	$(BIN)/mypy --strict src

test: lint
	$(BIN)/pytest -n auto tests e2e

demo: $(READY)
	$(BIN)/thirdshift demo

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

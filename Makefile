# Works on a fresh machine with Python 3.11+ and make: every target sets up .venv when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.ready

.PHONY: check test lint docs demo demo-fleet bench clean clis recordings

# The real claude, codex, opencode, gemini and qwen at the versions pinned in clis/, for the
# real_cli tests (e2e/real). Installed once, at the lockfile's versions and integrity hashes;
# `make test` does it when npm exists (without npm those tests skip, unless
# THIRDSHIFT_REQUIRE_REAL_CLIS=1 makes them fail). Not `npm ci`: a lockfile made where the
# registry lacks some platforms' optional packages (opencode's darwin and windows builds) lacks
# their entries, and `npm ci` refuses it; `--no-save` leaves the lockfile as it is.
# Install scripts are off but for Claude's and opencode's, which put their native binaries in
# place (opencode's hard-links the one npm installed; neither downloads), so the result does not
# depend on the npm version's script policy.
NPM := $(shell command -v npm 2>/dev/null)
CLIS_READY := clis/node_modules/.ready

$(CLIS_READY): clis/package.json clis/package-lock.json
	cd clis && npm install --no-save --ignore-scripts --no-audit --no-fund
	cd clis && node node_modules/@anthropic-ai/claude-code/install.cjs
	cd clis && node node_modules/opencode-ai/postinstall.mjs
	touch $(CLIS_READY)

clis: $(CLIS_READY)

# Said before it starts: on a fresh clone, the quiet installs take about half a minute.
$(READY): pyproject.toml
	@echo "make: setting up $(VENV): thirdshift and its developers' set (once; about 30 s)..."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(READY)
	@echo "make: $(VENV) is ready"

lint: $(READY)
	$(BIN)/ruff check src tests e2e bench
	$(BIN)/ruff format --check src tests e2e bench
	$(BIN)/mypy --strict src tests e2e

# The inner loop: the checkers and the fast tier (tests/: in this process, no process started;
# bench/ measures how long it takes). `make test` is the whole suite, as CI runs it.
check: lint
	$(BIN)/pytest -n auto tests

test: lint docs $(if $(NPM),$(CLIS_READY))
	$(BIN)/pytest -n auto tests e2e

# The docs site (mkdocs.yml) into site/, git-ignored. --strict fails on a broken link or anchor,
# a page left out of the nav and a name the API reference cannot find.
# NO_MKDOCS_2_WARNING: mkdocs-material's banner about its successor, not about these docs.
docs: $(READY)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

demo: $(READY)
	@echo "make demo: running thirdshift demo (a fake Claude, no network; a few seconds)"
	$(BIN)/thirdshift demo

# Seven sessions on three hosts, one worker killed mid-session, through a Temporal dev server
# (the developers' set has the extra and the temporal CLI).
demo-fleet: $(READY)
	$(BIN)/thirdshift demo --fleet

# Play every conformance scenario on each pinned real CLI under the fake model and keep the
# streams, filtered, as the committed recordings (src/thirdshift/testing/streams; review the
# diff like tests/transcripts). `check` still exits 1 when a scenario fails: the recordings are
# written either way, so that a changed CLI's streams can be read.
recordings: $(READY) $(CLIS_READY)
	PATH="$(CURDIR)/clis/node_modules/.bin:$$PATH" $(BIN)/thirdshift check \
		--harness claude --harness codex --harness opencode --harness gemini --harness qwen \
		--record src/thirdshift/testing/streams

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
	$(BENCH_VENV)/bin/python bench/containment.py
	$(BIN)/python bench/fleet.py
	$(BIN)/python bench/telemetry.py

clean:
	rm -rf $(VENV) $(BENCH_VENV) .mypy_cache .pytest_cache .ruff_cache clis/node_modules site

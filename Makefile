# TLS Audit. Two commands matter: `make run` and `make test` (see README.md).
SHELL := /bin/bash
PY_SYS ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

# make run: SQLite and the filesystem broker unless DATABASE_URL / REDIS_URL are set.
RUN_ENV := PATH=$(CURDIR)/$(VENV)/bin:$$PATH DEBUG=1 TLSAUDIT_DEV=1 TLSAUDIT_ALLOW_PRIVATE_TARGETS=1 PYTHONUNBUFFERED=1
# make test: the real PostgreSQL and Redis of this machine.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/tlsaudit
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
# Three test processes (pytest-xdist) on this project's 2-core machines: the suite mostly waits (servers,
# browsers, deadlines), and two processes left the cores half idle. Each has its own PostgreSQL database
# (test_tlsaudit_gwN) and Redis database (tests/support/worker_env.py). The wall-clock tests run in two
# serial groups (--dist=loadgroup), and while the "timing" group measures, one other busy test at most runs
# beside it (tests/support/quiet.py, the seats).
TEST_WORKERS ?= 3
XDIST := -n $(TEST_WORKERS) --dist=loadgroup
FUZZ_SECONDS ?= 180
TEST_ENV := TLSAUDIT_DEV=1 TLSAUDIT_ALLOW_PRIVATE_TARGETS=1 DATABASE_URL=$(TEST_DATABASE_URL) \
            REDIS_URL=$(TEST_REDIS_URL) TLSAUDIT_VAR_DIR=$(CURDIR)/var/test

.DEFAULT_GOAL := help
.PHONY: help fastloop setup run test test-fast test-ready fuzz stack-test system services vendor lock check lint clean bench bench-full schema

help:  ## what each target does (times measured on this project's 2-core machines)
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  make %-12s %s\n", $$1, $$2}'

# The load engine's C loop (workers/load/_fastloop.c), built in place; rebuilt only when its source
# changes. Without it (no compiler, OpenSSL or Python headers, or a compiler that refuses the source)
# the Python engine runs every load test: `make setup`/`make run` go on; `make test` needs it (its
# tests run both engines) and builds it with warnings as errors, as CI does.
FASTLOOP_SRC := workers/load/_fastloop.c
FASTLOOP := workers/load/_fastloop$(shell $(if $(wildcard $(PY)),$(PY),$(PY_SYS)) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
FASTLOOP_CFLAGS ?= -O2 -Wall -Wextra -Wno-unused-parameter
PY_INCLUDE = $$($(PY) -c "import sysconfig; print(sysconfig.get_paths()['include'])")

$(FASTLOOP): $(FASTLOOP_SRC) | $(STAMP)
	@if command -v $(CC) >/dev/null 2>&1 && [ -f /usr/include/openssl/ssl.h ] && [ -f "$(PY_INCLUDE)/Python.h" ]; then \
	  echo "$(CC) ... $(FASTLOOP_SRC) -o $@"; \
	  $(CC) $(FASTLOOP_CFLAGS) -shared -fPIC -I"$(PY_INCLUDE)" $(FASTLOOP_SRC) -o $@ -lssl -lcrypto \
	    || { rm -f $@; echo "The C load loop did not compile (above): load tests run on the Python engine."; }; \
	else \
	  echo "The C load loop is not built (needs $(CC), libssl-dev and Python's headers; make test installs them): load tests run on the Python engine."; \
	fi

setup: $(STAMP) $(FASTLOOP)  ## idempotent: venv + pinned requirements + the C load loop

fastloop: $(FASTLOOP)  ## build the load engine's C loop (make setup does it when it is missing or stale)

$(STAMP): requirements.txt
	@test -x $(PY) || $(PY_SYS) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@rm -f $(VENV)/.installed-* && touch $@

run: setup  ## the app on embedded defaults (SQLite, filesystem broker): web, worker and beat on :8000
	@# Quiet: the demo login below is what a new user needs to see, not ninety migrations.
	$(RUN_ENV) $(PY) manage.py migrate --noinput -v 0
	$(RUN_ENV) $(PY) manage.py ensure_demo
	$(RUN_ENV) $(VENV)/bin/honcho start -f Procfile

system:  ## Debian packages the tests drive (installed only when missing)
	@.ci/ensure-system

services:  ## start PostgreSQL / Redis when they are down
	@.ci/ensure-services

test: test-ready  ## the whole suite, 3 processes (~20 min on 2 cores; the fuzzing phase is `make fuzz`)
	$(TEST_ENV) $(PY) -m pytest $(XDIST) -m "not fuzz" $(PYTEST_ARGS)

test-fast: test-ready  ## the edit-test loop (~3 min on 2 cores): no worker, browser, fuzz, fault, timing or slow tests; keeps its database
	$(TEST_ENV) $(PY) -m pytest $(XDIST) --reuse-db -m "not (worker or browser or fuzz or faults or timing or slow)" \
	  $(PYTEST_ARGS)

fuzz: test-ready  ## schemathesis's fuzzing phase against the API for FUZZ_SECONDS (default 180), as CI runs it
	SCHEMATHESIS_MAX_TIME=$(FUZZ_SECONDS) $(TEST_ENV) $(PY) -m pytest -m fuzz tests/api/test_schema.py $(PYTEST_ARGS)

stack-test: setup system  ## the production stack booted for real: docker compose from .env.example, used as a user would (~4 min fresh, ~2 after)
	$(PY) tests/stack/run.py

test-ready: setup system services
	@# again: `system` may just have installed the compiler; here a warning is an error, and no loop a failure
	@$(MAKE) -s --no-print-directory fastloop FASTLOOP_CFLAGS="$(FASTLOOP_CFLAGS) -Werror"
	@test -f $(FASTLOOP) || { echo "make test needs the C load loop (its tests run both engines): see above."; exit 1; }
	@mkdir -p var/test test-artifacts

# make bench: its own PostgreSQL database (created and migrated by the scripts) and Redis database.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/tlsaudit_bench
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/14
BENCH_ENV := DATABASE_URL=$(BENCH_DATABASE_URL) REDIS_URL=$(BENCH_REDIS_URL) TLSAUDIT_VAR_DIR=$(CURDIR)/var/bench
MODE ?= quick

bench: setup system services  ## benchmarks, quick mode (goal: under 5 min; docs/benchmarks.md shows the last run's time), writes docs/benchmarks.md
	@mkdir -p var/bench
	$(BENCH_ENV) $(PY) bench/run.py --mode $(MODE) $(BENCH_ARGS)

bench-full:  ## benchmarks, full mode (45 min or more on 2 cores), writes docs/benchmarks.md
	$(MAKE) bench MODE=full

lint: setup  ## ruff: pyflakes, pycodestyle and import order (pyproject.toml), as CI runs it
	$(VENV)/bin/ruff check .

check: setup  ## security checks CI runs: bandit (any finding fails) and the dependency audit (.ci/audit-deps)
	$(VENV)/bin/bandit -r tlsaudit workers -ll -q
	.ci/audit-deps

vendor:  ## refresh static/vendor from the npm registry (package-lock.json)
	npm ci --no-audit --no-fund
	cp node_modules/htmx.org/dist/htmx.min.js static/vendor/htmx.min.js
	cp node_modules/chart.js/dist/chart.umd.min.js static/vendor/chart.umd.min.js
	@# The .map is not vendored: its comment would make collectstatic's manifest step fail.
	sed -i '/^\/\/# sourceMappingURL=/d' static/vendor/chart.umd.min.js

schema: setup  ## regenerate docs/openapi.yaml (a test fails when it drifts from the code)
	TLSAUDIT_DEV=1 $(PY) manage.py spectacular --validate --fail-on-warn --file docs/openapi.yaml

lock:  ## re-pin requirements.txt from requirements.in, and requirements-prod.txt (the image's) at the same versions
	$(PY) -m pip install --quiet -r requirements.in
	( echo "# Pinned. Regenerate with \`make lock\` after editing requirements.in."; $(PY) -m pip freeze --exclude-editable | LC_ALL=C sort -f ) > requirements.txt
	$(PY) deploy/lock_prod.py

clean:
	rm -rf var/test var/pytest-cache test-artifacts .pytest_cache

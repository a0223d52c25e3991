# Sluice — the two commands a newcomer needs: `make run` and `make test` (`make check`, the
# fast tier, before each commit).
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV   ?= .venv
# Debian's own Python when it is new enough: it lives where every user can read it, so the
# runtime worker can drop root for the unprivileged user sluice (a pyenv under /root cannot).
SYSTEM_PYTHON := $(shell /usr/bin/python3 -c 'import sys; assert sys.version_info >= (3, 11); print(sys.executable)' 2>/dev/null)
PYTHON ?= $(or $(SYSTEM_PYTHON),python3)
PY     := $(VENV)/bin/python
# The venv is rebuilt whenever the pinned dependencies or the interpreter change. uv installs
# them (about twice as fast as pip on a fresh machine: parallel downloads; the same pins).
UV_VERSION := 0.13.9
DEPS_STAMP := $(VENV)/.deps-$(shell (cat pyproject.toml; echo $(PYTHON) $(UV_VERSION)) | sha1sum | cut -c1-12)

.PHONY: help install system jars frontend run check test fault-test lint unit integration e2e bench bench-wire bench-control bench-discovery bench-density bench-memory bench-fleet bench-drain bench-group bench-faults compose-test clean distclean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

install: system $(DEPS_STAMP) jars ## Install everything missing (apt packages, venv, jars)

system: ## Debian packages the stack and its tests need (redis-server, Java, Maven, Chromium, PostgreSQL…)
	@bash scripts/ensure-system.sh

# What `make run` alone needs (no Chromium, PostgreSQL or the fault suite's tools). Every
# install step below comes after it: the venv needs no package, the jars need Java and Maven.
.PHONY: system-run
system-run:
	@bash scripts/ensure-system.sh --run

$(DEPS_STAMP): pyproject.toml | system-run
	@if [ -x $(PY) ] && [ "$$($(PY) -c 'import os, sys; print(os.path.realpath(sys._base_executable))')" != "$$($(PYTHON) -c 'import os, sys; print(os.path.realpath(sys.executable))')" ]; then \
	  echo "==> the venv was made with another Python: rebuilding it with $(PYTHON)"; rm -rf $(VENV); fi
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check "uv==$(UV_VERSION)"
	@$(VENV)/bin/uv pip install -q --python $(PY) -e ".[dev]"
	@rm -f $(VENV)/.deps-* && touch $@

jars: ## Kafka broker, MirrorMaker 2 and Spark Kafka connector jars from Maven Central, Sluice's Spark functions, the sign-in tests' Keycloak (cached)
	@bash scripts/fetch-jars.sh

# `make run`'s jars: the broker's and Sluice's Spark functions need no venv (fetched and built
# while it installs; the functions without their JUnit tests, which `make test` runs); the Spark
# connector's list is what the venv's pyspark lacks.
.PHONY: jars-broker jars-functions jars-spark
jars-broker: | system-run
	@bash scripts/fetch-jars.sh kafka
jars-functions: | jars-broker
	@bash scripts/fetch-jars.sh --no-tests sluice-spark
jars-spark: $(DEPS_STAMP)
	@bash scripts/fetch-jars.sh spark-kafka

frontend: ## Build the browser console into frontend/dist (npm ci when the lock file changed)
	@bash scripts/frontend.sh

.PHONY: docs docs-serve
docs: $(DEPS_STAMP) ## Build the manual into build/site (reference pages generated from the code)
	@bash scripts/docs.sh build

docs-serve: $(DEPS_STAMP) ## Serve the manual on http://127.0.0.1:8001, rebuilt on every change
	@bash scripts/docs.sh serve

.PHONY: api-types
api-types: $(DEPS_STAMP) ## Regenerate the console's TypeScript API types from the OpenAPI schema
	@bash scripts/api-types.sh

# The steps that do not depend on each other run side by side (make -j): the venv, the jars
# and the console's build. A cold first run on a fresh machine is about a minute and a half.
# The database is prepared (migrations, the console's static files, the admin, the demo) while
# the jars build.
.PHONY: run-install run-db
run-db: $(DEPS_STAMP) frontend
	@bash scripts/run.sh --prepare
run-install: system-run $(DEPS_STAMP) jars-broker jars-functions jars-spark frontend run-db

run: ## Start the whole embedded stack on 127.0.0.1, installing what is missing (Ctrl-C stops it all)
	@$(MAKE) --no-print-directory -j4 --output-sync=line run-install
	@SLUICE_PREPARED=1 bash scripts/run.sh

check: $(DEPS_STAMP) ## The fast tier, before each commit: lint, types, the unit tests that need no service (in parallel), Vitest; nothing started
	@bash scripts/check.sh

test: install ## Install what is missing, start what the tests need, run every check
	@bash scripts/test.sh

fault-test: install ## The fault suite as root: brokers and runtime hosts (network namespaces) killed under running channels
	@bash scripts/fault-test.sh

lint: ## Only the static checks (ruff, import contracts, mypy, Django checks, tsc and ESLint, the manual)
	@bash scripts/test.sh --lint-only

.PHONY: typecheck
typecheck: $(DEPS_STAMP) ## Only mypy on the packages [tool.mypy] lists (pipelines and runtime_adapter strict, console)
	@$(VENV)/bin/mypy

unit: ## Only the fast tests (real Redis, local Spark; no Kafka)
	@bash scripts/test.sh tests/unit

integration: ## Only the integration tests (real Kafka, Redis, Spark)
	@bash scripts/test.sh tests/integration

e2e: install ## Only the browser tests (headless Chromium against the running stack)
	@bash scripts/test.sh tests/e2e

compose-test: ## Build the image, run docker/compose.yaml on Docker, test a channel through a killed worker
	@bash scripts/compose-test.sh

bench: install ## Data-plane benchmark (Sluice vs plain PySpark, Flink, Kafka Streams, a Python loop, Kafka's tools), then bus, wire and discovery
	@.venv/bin/python -m bench.dataplane $(BENCH_ARGS)

bench-wire: install ## Wire formats: Kafka (Avro or Protobuf, registry) → filter → Kafka (same) vs the JSON channel
	@.venv/bin/python -m bench.wire $(BENCH_ARGS)

bench-control: install ## Control-plane benchmark: reconcile, status lists, lifecycle latencies
	@.venv/bin/python -m bench.control $(BENCH_ARGS)

bench-fleet: install frontend ## 10,000 channels: list pages with status (server, Chromium), bulk stop of 1,000
	@.venv/bin/python -m bench.fleet --chromium $(BENCH_ARGS)

bench-drain: install ## Drain a runtime worker hosting 20 channels: time to all RUNNING elsewhere, events lost
	@.venv/bin/python -m bench.drain $(BENCH_ARGS)

bench-group: install ## The runtime group at scale, simulated: 5,000 channels on 20 workers, kill -9 of one, start/stop, CPU
	@.venv/bin/python -m bench.group_scale $(BENCH_ARGS)

bench-faults: install ## As root: 20 partition trials and a kill -9 under 30 channels on the fault suite's hosts (about 25 minutes)
	@.venv/bin/python -m bench.faults $(BENCH_ARGS)

bench-discovery: install ## Schema discovery's sampling on vs off on the bench query (target >= 0.95x)
	@.venv/bin/python -m bench.discovery $(BENCH_ARGS)

bench-density: install ## Channels per host: 10, 50, 100 idle channels' deploy time, CPU and memory
	@.venv/bin/python -m bench.density $(BENCH_ARGS)

bench-memory: install ## Memory: a shared driver idle and busy vs Flink and Kafka Streams; heap per channel and where it goes
	@.venv/bin/python -m bench.memory $(BENCH_ARGS)

clean: ## Remove runtime data (var/: database, Kafka and Redis data, checkpoints, logs)
	rm -rf var test-artifacts bench-results build/site

distclean: clean ## Also remove the venv, downloaded jars and the console's packages and build
	rm -rf $(VENV) .cache frontend/node_modules frontend/dist

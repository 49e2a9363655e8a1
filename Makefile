# Tax Policy Navigator. `make demo` and `make test` are the two newcomer commands (README).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
TAXNAV := $(VENV)/bin/taxnav
SOURCE ?= ../shared/corpus
DATA_DIR ?= data
QUESTION ?= How much can my employer pay me per mile for using my own car for work without tax?
PORT ?= 8000
# Root installs with apt-get directly; anyone else through sudo.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: setup test-deps chromium redis demo ingest serve ask test eval eval-heldout eval-sweep bench bench-ingest bench-query screens up down config stack-check

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,eval]'
	touch $@

setup: $(VENV)/.installed

# What the tests talk to besides Python packages; each step is skipped when already there.
test-deps: chromium redis

# Debian's headless Chromium for the browser tests (never a downloaded browser build).
chromium:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
	  echo "installing Debian chromium + chromium-driver for the browser tests"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi

# The distributed tests need a Redis on 127.0.0.1:6379; start one (no persistence) when none answers.
REDIS_PORT ?= 6379
redis:
	@if ! redis-cli -h 127.0.0.1 -p $(REDIS_PORT) ping >/dev/null 2>&1; then \
	  if ! command -v redis-server >/dev/null 2>&1; then \
	    $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server >/dev/null; \
	  fi; \
	  echo "starting redis-server on 127.0.0.1:$(REDIS_PORT)"; \
	  redis-server --daemonize yes --bind 127.0.0.1 --port $(REDIS_PORT) --save "" --appendonly no >/dev/null; \
	  for _ in $$(seq 50); do redis-cli -h 127.0.0.1 -p $(REDIS_PORT) ping >/dev/null 2>&1 && break; sleep 0.1; done; \
	  redis-cli -h 127.0.0.1 -p $(REDIS_PORT) ping >/dev/null || { echo "redis-server did not start on $(REDIS_PORT)" >&2; exit 1; }; \
	fi

# Ingest the three manuals (EIM, BIM, SAM: questions for the other two are routed there) from
# the local corpus, start the gateway, ask one question through its API.
demo: ingest
	$(PY) -m gateway.demo --data-dir $(DATA_DIR) --port $(PORT) --question "$(QUESTION)"

# All three manuals in ../shared/corpus (EIM, BIM, SAM), each into its own collection.
ingest: setup
	$(TAXNAV) ingest --data-dir $(DATA_DIR) --source $(SOURCE) --manual all

serve: setup
	$(TAXNAV) serve --data-dir $(DATA_DIR) --port $(PORT)

ask: setup
	$(TAXNAV) ask --data-dir $(DATA_DIR) "$(QUESTION)"

test: setup test-deps
	$(VENV)/bin/pytest -q

eval: setup
	$(TAXNAV) eval --data-dir $(DATA_DIR) --source $(SOURCE) --questions ../shared/eval/questions.jsonl --out reports/eval

# Questions written on pages the 50 never use: checks that tuning generalises.
eval-heldout: setup
	$(TAXNAV) eval --data-dir $(DATA_DIR) --source $(SOURCE) --questions tests/evaluation/heldout_questions.jsonl --out reports/eval-heldout --variants full

# One question per 5th page from its title ("What are the rules on <title>?"): nothing to tune to.
eval-sweep: setup
	$(TAXNAV) eval --data-dir $(DATA_DIR) --sweep --every 5 --out reports/eval-sweep

bench: bench-ingest bench-query

bench-ingest: setup
	$(TAXNAV) bench ingest --source $(SOURCE) --out reports/bench-ingest.json

bench-query: setup
	$(TAXNAV) bench query --data-dir $(DATA_DIR) --out reports/bench-query.json

# The page answering QUESTION in headless Chromium: whole-page PNGs at desktop and phone width.
screens: setup chromium
	$(TAXNAV) bench screens --data-dir $(DATA_DIR) --out reports/screens --question "$(QUESTION)"

# The distributed stack. PROFILE picks the stores: local (Redis + embedded stores), servers
# (Redis + OpenSearch + Qdrant); .env's COMPOSE_PROFILES wins when set (deploy/README.md).
# Compose is Docker's plugin, else the test extra's binary (deploy/compose.sh): `config` runs
# anywhere; `up` and `down` need a Docker daemon, and say so when none answers.
PROFILE ?= local
FIND_COMPOSE = compose="$$(deploy/compose.sh $(PY))" || exit 1
NEEDS_DAEMON = $$compose ls >/dev/null 2>&1 || { \
	  echo "make $@ needs a running Docker daemon, which $$compose cannot reach (is dockerd running? DOCKER_HOST?);" \
	       "make config checks docker-compose.yml without one" >&2; exit 1; }

up:
	@$(FIND_COMPOSE); $(NEEDS_DAEMON); \
	set -x; COMPOSE_PROFILES=$${COMPOSE_PROFILES:-$(PROFILE)} $$compose up -d --build

down:
	@$(FIND_COMPOSE); $(NEEDS_DAEMON); \
	set -x; $$compose --profile local --profile servers down

# The distributed stack for real on this machine (as root: it may install docker.io and
# debootstrap and start dockerd): build, up with all three manuals, scale, kill replicas
# mid-question, restart and fill Redis, tear down; reports/stack-check.json (deploy/stack_check.py).
stack-check: setup
	$(PY) deploy/stack_check.py

config:
	@$(FIND_COMPOSE); \
	COMPOSE_PROFILES=$${COMPOSE_PROFILES:-$(PROFILE)} $$compose config --quiet && \
	echo "docker-compose.yml is valid (profile $${COMPOSE_PROFILES:-$(PROFILE)}; $$compose)"

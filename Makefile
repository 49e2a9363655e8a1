# Tax Policy Navigator. `make demo` and `make test` are the two newcomer commands (README).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
TAXNAV := $(VENV)/bin/taxnav
SOURCE ?= ../shared/corpus
DATA_DIR ?= data
QUESTION ?= How much can my employer pay me per mile for using my own car for work without tax?
PORT ?= 8000

.PHONY: setup demo ingest ingest-all serve ask test eval eval-heldout eval-sweep bench bench-ingest bench-query up down

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

setup: $(VENV)/.installed

# Ingest the EIM from the local corpus, start the gateway, ask one question through its API.
demo: setup
	$(TAXNAV) ingest --data-dir $(DATA_DIR) --source $(SOURCE)
	$(PY) -m gateway.demo --data-dir $(DATA_DIR) --port $(PORT) --question "$(QUESTION)"

ingest: setup
	$(TAXNAV) ingest --data-dir $(DATA_DIR) --source $(SOURCE)

# All three manuals in ../shared/corpus (EIM, BIM, SAM), each into its own collection.
ingest-all: setup
	$(TAXNAV) ingest --data-dir $(DATA_DIR) --source $(SOURCE) --manual all

serve: setup
	$(TAXNAV) serve --data-dir $(DATA_DIR) --port $(PORT)

ask: setup
	$(TAXNAV) ask --data-dir $(DATA_DIR) "$(QUESTION)"

test: setup
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

up:
	docker compose up -d --build

down:
	docker compose down

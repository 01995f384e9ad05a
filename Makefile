# The two commands of the README: `make run` (the whole product) and `make test` (every test).
# Both build the virtual environment from the lock file, make the development certificates and compile the
# translations first, so they work on a fresh machine with Python 3.11.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
PORTAL_PORT ?= 8000
BANK_PORT ?= 8001
VAR_DIR ?= var
export PORTAL_PORT BANK_PORT VAR_DIR

# `make run` wires the portal to the sandbox bank it starts; set these to point it elsewhere.
run: export PORTAL_BASE_URL ?= http://127.0.0.1:$(PORTAL_PORT)
run: export BANK_BASE_URL ?= http://127.0.0.1:$(BANK_PORT)

.PHONY: run bank test lint venv certs messages migrate lock bench clean help

help:
	@echo "make run    - portal, sandbox bank, Celery worker and beat on embedded defaults"
	@echo "make bank   - only the sandbox bank (port from PORT, default 8001)"
	@echo "make test   - ruff and the whole test suite"
	@echo "make bench  - the benchmarks under bench/"

$(VENV)/.installed: requirements.lock
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11 or newer is needed")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	@touch $@

venv: $(VENV)/.installed

$(VAR_DIR)/pki/tpp-qseal.pem: | venv
	$(PY) -m devtools.pki $(VAR_DIR)/pki

certs: $(VAR_DIR)/pki/tpp-qseal.pem

messages: venv
	$(BIN)/pybabel compile --domain django --directory locale --statistics

migrate: venv certs
	$(PY) manage.py migrate --noinput
	$(PY) -m bank_simulator migrate --noinput

run: venv certs messages migrate
	$(PY) -m bank_simulator sandbox_initialize --if-empty
	$(PY) manage.py ensure_demo_users
	$(BIN)/honcho start --procfile Procfile

bank: venv certs
	$(PY) -m bank_simulator migrate --noinput
	$(PY) -m bank_simulator sandbox_initialize --if-empty
	BANK_PORT=$${PORT:-$(BANK_PORT)} $(BIN)/honcho start --procfile bank_simulator/Procfile --app-root .

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check xs2a bank_simulator tpp_portal accounts payments sandbox_admin devtools tests bench

test: venv certs messages lint
	$(BIN)/pytest --ignore=tests/bank_simulator $(PYTEST_ARGS)
	$(BIN)/pytest tests/bank_simulator --ds=bank_simulator.settings $(PYTEST_ARGS)

bench: venv certs
	$(PY) -m bench

lock:
	$(PYTHON) -m pip install --quiet uv && $(PYTHON) -m uv pip compile pyproject.toml --extra dev \
		--python-version 3.11 --generate-hashes -o requirements.lock

clean:
	rm -rf var/broker var/cache var/staticfiles

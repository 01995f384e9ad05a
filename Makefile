# The two commands of the README: `make run` (the whole product) and `make test` (every test).
# Both build the virtual environment from the lock file, make the development certificates and compile the
# translations first, so they work on a fresh machine with Python 3.11; `make test` also installs the system
# programs its suites need (devtools/system-packages).

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
# The bank it starts is the sandbox on any port (the staff sandbox area, the clock and the batches need it).
run: export BANK_IS_SANDBOX ?= true
# The portal polls payment statuses after the bank's batches: the batch times of the sandbox bank it starts
# (in a variable: $(or) splits its arguments at commas, so a literal list would give only its first time).
SANDBOX_BATCH_TIMES := 05:00,08:00,11:00,13:00,15:00
run: export BANK_BATCH_TIMES ?= $(or $(BANK_SIM_BATCH_TIMES),$(SANDBOX_BATCH_TIMES))

.PHONY: run bank test test-portal test-bank system-packages soak smoke lint venv certs messages migrate lock advisories bench clean help

help:
	@echo "make run      - portal, sandbox bank, Celery worker and beat on embedded defaults"
	@echo "make bank     - only the sandbox bank (port from PORT, default 8001)"
	@echo "make test     - system packages, lint and the whole test suite (QUICK=1: without the slow suites)"
	@echo "make test-portal - the portal's pytest run of make test alone"
	@echo "make test-bank - the sandbox bank's pytest run of make test alone"
	@echo "make system-packages - check chromium, nginx, pg_dump, redis-server, xgettext; install them as root"
	@echo "make lint     - ruff, bandit and the import contract"
	@echo "make soak     - the exactly-once model for long (SOAK_EXAMPLES, default 10000; SOAK_STEPS, default 30)"
	@echo "make smoke    - the production smoke test: compose's processes behind nginx (PostgreSQL, Redis)"
	@echo "make bench    - the benchmarks under bench/"
	@echo "make venv     - .venv from requirements-dev.lock"
	@echo "make certs    - the development certificates under var/pki/"
	@echo "make messages - compile the translations"
	@echo "make migrate  - migrate the portal's and the sandbox bank's databases"
	@echo "make lock     - re-pin requirements.lock (runtime) and requirements-dev.lock (runtime + dev)"
	@echo "make advisories - refresh the vulnerability snapshot of both lock files (needs PyPI)"
	@echo "make clean    - remove the broker's queue, the cache and the collected static files under var/"
	@echo "make help     - this list"

# The development environment: the runtime pins plus the tools of the tests (requirements-dev.lock). The image
# (docker/Dockerfile) installs only the runtime pins (requirements.lock).
$(VENV)/.installed: requirements-dev.lock
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python 3.11 or newer is needed")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.lock
	@touch $@

venv: $(VENV)/.installed

$(VAR_DIR)/pki/tpp-qseal.pem: | venv
	$(PY) -m devtools.pki $(VAR_DIR)/pki

certs: $(VAR_DIR)/pki/tpp-qseal.pem

messages: venv
	$(BIN)/pybabel compile --domain django --directory locale --statistics
	$(BIN)/pybabel compile --domain djangojs --directory locale --statistics
	$(BIN)/pybabel compile --domain django --directory bank_simulator/locale --statistics

migrate: venv certs
	$(PY) manage.py migrate --noinput
	$(PY) -m bank_simulator migrate --noinput

run: venv certs messages migrate
	rm -rf $(VAR_DIR)/metrics  # the metric counters of the previous run's processes (docs/operations.md)
	$(PY) -m bank_simulator sandbox_initialize --if-empty
	$(PY) manage.py ensure_demo_users
	TZ=UTC $(BIN)/honcho start --procfile Procfile  # TZ: honcho's own time stamps in UTC, as every log line

bank: venv certs
	$(PY) -m bank_simulator migrate --noinput
	$(PY) -m bank_simulator sandbox_initialize --if-empty
	TZ=UTC BANK_PORT=$${PORT:-$(BANK_PORT)} $(BIN)/honcho start --procfile bank_simulator/Procfile --app-root .

CODE_DIRS := common bank_spec xs2a bank_simulator tpp_portal core users connections accounts payments staff \
	sandbox_admin devtools bench

# ruff (style and its S security rules), bandit (static security scan, configured in pyproject.toml) and the
# import contract (import-linter, pyproject.toml: which package may import which; docs/architecture.md).
# The dependency audit is a test (tests/security/test_dependencies.py): offline, against the snapshot below.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check $(CODE_DIRS) tests
	$(BIN)/bandit -c pyproject.toml --quiet --recursive $(CODE_DIRS)
	$(BIN)/lint-imports --no-cache

# The tests run in TEST_WORKERS processes (pytest-xdist), a test module and its fixtures in one of them; what the
# processes would otherwise share (Redis, the metric files) tests/workers.py gives each its own. 0: one process.
TEST_WORKERS ?= 4
PYTEST_WORKERS = -n $(TEST_WORKERS) $(if $(filter 0,$(TEST_WORKERS)),,--dist loadscope)

# chromium, nginx, pg_dump/pg_restore, redis-server and xgettext: installed when missing if run as root with
# apt-get, else it stops naming the command (devtools/system-packages).
system-packages:
	@devtools/system-packages

# `make test QUICK=1` leaves out the slow suites (browser, end-to-end, fault, load, the production smoke test) and
# the tests that need a PostgreSQL server (marker postgres): CI's first pass, on the embedded defaults.
SLOW_SUITES := tests/e2e tests/faults tests/load tests/browser tests/production
QUICK_ARGS = $(if $(filter-out 0,$(QUICK)),$(addprefix --ignore=,$(SLOW_SUITES)) -m "not postgres")

# The sandbox bank's tests (settings of their own) run beside the portal's, which keep the two cores busy only part
# of the time (many wait on a server or a browser); their output is kept in a file and shown after the portal's.
test: system-packages venv certs messages lint
	rm -rf $(VAR_DIR)/metrics  # the metric counters of earlier processes (the tests compare before and after)
	@echo "the sandbox bank's tests run alongside; their output follows the portal's"
	@$(MAKE) --no-print-directory test-bank > $(VAR_DIR)/test-bank.log 2>&1 & bank=$$!; \
		$(MAKE) --no-print-directory test-portal; portal=$$?; \
		wait $$bank; bank=$$?; cat $(VAR_DIR)/test-bank.log; \
		test $$portal -eq 0 && test $$bank -eq 0

test-portal:
	$(BIN)/pytest $(PYTEST_WORKERS) --ignore=tests/bank_simulator $(QUICK_ARGS) $(PYTEST_ARGS)

test-bank:
	$(BIN)/pytest $(PYTEST_WORKERS) tests/bank_simulator --ds=bank_simulator.settings $(QUICK_ARGS) $(PYTEST_ARGS)

# The exactly-once model (tests/payments/test_exactly_once.py, README) for as long as asked: SOAK_EXAMPLES examples
# of SOAK_STEPS steps against the three sandbox banks; it prints examples, steps, duplicates and lost payments.
SOAK_EXAMPLES ?= 10000
SOAK_STEPS ?= 30
soak: venv certs messages
	EXACTLY_ONCE_EXAMPLES=$(SOAK_EXAMPLES) EXACTLY_ONCE_STEPS=$(SOAK_STEPS) EXACTLY_ONCE_TIMEOUT=0 LOG_LEVEL=ERROR \
		$(BIN)/pytest -s -p no:logging tests/payments/test_exactly_once.py::test_exactly_once_at_any_bank $(PYTEST_ARGS)

# The production smoke test alone (tests/production, README): compose's processes behind nginx, on PostgreSQL and
# Redis, the local servers unless DATABASE_URL and REDIS_URL say otherwise.
smoke: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/tpp_portal
smoke: export REDIS_URL ?= redis://127.0.0.1:6379/0
smoke: system-packages venv certs messages
	$(BIN)/pytest tests/production -m production $(PYTEST_ARGS)

bench: venv certs
	$(PY) -m bench

# Re-pin, then take the advisory snapshot of the new pins (the offline audit test needs one for every pin).
# The development lock is resolved first (runtime and dev extras together); the runtime lock is then resolved
# from pyproject.toml's runtime dependencies alone, constrained to the development lock's versions, so the two
# files pin every shared package at the same version (tests/security/test_dependencies.py checks it). Pins
# already in a lock file are kept; `make lock UPGRADE=1` moves every pin to the newest allowed release.
LOCK_FLAGS = --python-version 3.11 --generate-hashes $(if $(UPGRADE),--upgrade)
lock:
	$(PYTHON) -m pip install --quiet uv
	$(PYTHON) -m uv pip compile pyproject.toml --extra dev $(LOCK_FLAGS) -o requirements-dev.lock
	$(PYTHON) -m uv pip compile pyproject.toml --constraint requirements-dev.lock $(LOCK_FLAGS) -o requirements.lock
	$(MAKE) advisories

# The known vulnerabilities of every pinned package of both lock files, from PyPI's advisory data (OSV), saved
# for the offline audit test. `make lock` runs it; run it again before a release. The only target that asks PyPI
# about advisories. Where PyPI's per-version API does not answer, pip-audit audits nothing ("not found" for every
# pin): the snapshot is then kept as it is (security/advisories/SOURCE.md gives the offline path).
ADVISORIES := security/advisories
advisories: venv
	$(BIN)/pip-audit --disable-pip --requirement requirements.lock --requirement requirements-dev.lock \
		--vulnerability-service pypi \
		--progress-spinner off --format json --output $(ADVISORIES)/pip-audit.new.json || [ $$? -eq 1 ]
	@$(PY) -c 'import json, sys; d = json.load(open(sys.argv[1]))["dependencies"]; \
		sys.exit(all("skip_reason" in x for x in d) and "pip-audit audited no pin (PyPI answered none): " \
		"the snapshot is kept; see $(ADVISORIES)/SOURCE.md")' $(ADVISORIES)/pip-audit.new.json \
		|| { rm -f $(ADVISORIES)/pip-audit.new.json; exit 1; }
	mv $(ADVISORIES)/pip-audit.new.json $(ADVISORIES)/pip-audit.json
	date -u +%Y-%m-%dT%H:%M:%SZ > $(ADVISORIES)/taken-at.txt

clean:
	rm -rf var/broker var/cache var/staticfiles

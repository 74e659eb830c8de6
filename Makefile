# Lindy: `make run` brings the product up, `make test` runs the suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000

.PHONY: run test install lint typecheck migrate seed chromium bench loadtest screenshots clean

$(BIN)/.installed: requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

install: $(BIN)/.installed

migrate: install
	$(BIN)/python manage.py migrate --noinput

seed: migrate
	$(BIN)/python manage.py seed_demo

run: seed
	@echo
	@echo "Lindy is starting on http://localhost:$(PORT)  (web, Celery worker and beat)"
	@echo "Log in with any demo login above; password: lindy-demo.  Ctrl-C stops everything."
	@echo
	PATH="$(CURDIR)/$(BIN):$$PATH" PORT=$(PORT) $(BIN)/honcho start -f Procfile

# Browser tests drive Debian's Chromium; install it when missing (needs root or sudo).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi; }

# With COVERAGE=1 (CI's PostgreSQL run), coverage (.coveragerc) is collected on the way and printed per
# app, and a total below .ci/coverage-floor fails; without it the suite runs at full speed (tracing costs
# about 1.7x on Python 3.11).
test: install chromium
	$(if $(COVERAGE),mkdir -p var/coverage)
	$(BIN)/python -m pytest -n $${PYTEST_WORKERS:-2} --dist loadgroup $(if $(COVERAGE),--cov --cov-report=)
	$(if $(COVERAGE),$(BIN)/python .ci/coverage-report)

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

typecheck: install
	$(BIN)/mypy

# Each demo login's home and main pages at 390 and 1280 px, into var/screenshots/ (index.html).
screenshots: seed chromium
	$(BIN)/python manage.py screenshots

# The goals are PostgreSQL's and Redis's: the local ones unless DATABASE_URL / REDIS_URL say otherwise
# (it builds and drops its own test database).
bench: install
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/lindy} REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:6379/0} \
	  $(BIN)/python -m pytest bench --benchmark-enable -p no:xdist -q

# The product as production runs it (2 gunicorn servers, 2 Celery workers on every queue, 1 beat) on
# PostgreSQL and Redis, under 3 minutes of load while workers are killed and a web server restarts.
# It builds and drops its own database (LOADTEST_DATABASE_URL, default lindy_loadtest on the local
# server) and empties its Redis database (LOADTEST_REDIS_URL, default db 8); non-zero when a goal fails.
loadtest: install
	$(BIN)/python loadtest/run.py

clean:
	rm -rf var

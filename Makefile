# Two commands do everything on a fresh machine: `make run` and `make test`.
# `make setup` prepares .venv, the model and the index of docs/, and is a no-op when they are current;
# `make test` needs the first two only (the tests build their own indexes).

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.setup-done
MODEL   := .assist/models/all-MiniLM-L6-v2/model.onnx
DOCS_INDEX := .assist/docs-index.stamp
CHROMIUM := /usr/bin/chromium
PORT    ?= 8000
PYTEST_ARGS ?=
# SLOW=1 adds the slow tier (schemathesis' 1,000+ cases) to the suite
SLOW_MARK := $(if $(SLOW),-m "slow or not slow",)

.PHONY: setup deps browser run test lint format clean

setup: deps $(DOCS_INDEX)

deps: $(STAMP) $(MODEL) browser

# The browser test's Chromium comes from Debian's packages (Playwright drives it; it never downloads a
# browser). Installed only where this runs as root with apt-get; elsewhere the browser test is skipped
# and says why. A failed install is not a failed set-up, for the same reason.
browser:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "== installing chromium (Debian package) for the browser test"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	    || echo "== chromium could not be installed: the browser test will be skipped"; \
	else echo "== no root or no apt-get: chromium not installed; the browser test will be skipped"; fi

$(STAMP): pyproject.toml tooling/pyproject.toml constraints.txt
	@echo "== creating $(VENV) and installing (first run: a few minutes)"
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch 2.13.0 CPU lies on this machine's disk; it is only used once, to export the model to ONNX.
	$(BIN)/pip install --quiet torch==2.13.0
	# the runtime with the tests' extra, and beside it the tooling (tooling/: the local stack, benchmarks, rehearsal)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]' -e ./tooling
	touch $(STAMP)

$(MODEL): $(STAMP)
	@echo "== exporting all-MiniLM-L6-v2 to ONNX"
	HF_HUB_OFFLINE=1 $(BIN)/assist model export
	touch $(MODEL)

# docs/ indexed into .assist/index (INDEX_URI's default) by the command a user runs, so the README's first
# `assist ask` answers at once; again (incrementally: changed pages only) when a page changes
$(DOCS_INDEX): $(MODEL) $(shell find docs -type f)
	@echo "== indexing docs/ into .assist/index (first run: a few minutes)"
	HF_HUB_OFFLINE=1 $(BIN)/assist index docs --index .assist/index
	touch $(DOCS_INDEX)

run: setup
	$(BIN)/assist local up --port $(PORT)

lint: deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	# the layer contract (pyproject.toml, ADR 0071), function-level imports included
	$(BIN)/lint-imports --no-cache

test: deps lint
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest $(SLOW_MARK) $(PYTEST_ARGS)

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .assist .pytest_cache

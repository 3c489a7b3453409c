# Two commands do everything on a fresh machine: `make run` and `make test`.
# Both depend on `make setup`, which prepares .venv and is a no-op when it is current.

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.setup-done
MODEL   := .assist/models/all-MiniLM-L6-v2/model.onnx
PORT    ?= 8000
PYTEST_ARGS ?=
# SLOW=1 adds the slow tier (schemathesis' 1,000+ cases) to the suite
SLOW_MARK := $(if $(SLOW),-m "slow or not slow",)

.PHONY: setup run test lint format clean

setup: $(STAMP) $(MODEL)

$(STAMP): pyproject.toml constraints.txt
	@echo "== creating $(VENV) and installing (first run: a few minutes)"
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch 2.13.0 CPU lies on this machine's disk; it is only used once, to export the model to ONNX.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

$(MODEL): $(STAMP)
	@echo "== exporting all-MiniLM-L6-v2 to ONNX"
	HF_HUB_OFFLINE=1 $(BIN)/assist model export
	touch $(MODEL)

run: setup
	$(BIN)/assist local up --port $(PORT)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: setup lint
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest $(SLOW_MARK) $(PYTEST_ARGS)

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .assist .pytest_cache

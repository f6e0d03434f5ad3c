"""Benchmarks: the work behind `spec-lsp bench`, figures printed as a table and JSON, never timed
asserts. `engine_bench` compares the engine's modes with transformers' own on `prompts`; `server`
measures the real server process over LSP (through `replay.client`); `syntax` measures what the
syntax stop callback saves. `commands/bench.py` is their argument parser."""

"""The speculative engine: torch only; knows nothing of LSP, editors or tree-sitter.

`api` holds the torch-free contract; import `loading.load_engine` to get a `SpecEngine`.
"""

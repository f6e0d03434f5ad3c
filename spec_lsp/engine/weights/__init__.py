"""Weight formats and the kernels that run them: what a loaded model's layers are made of.

Knows nothing of drafting, KV reuse or requests; imports from the rest of the engine only its
torch-free leaves (`api`'s format names, `progress`) and `sources` (the cache a kernel build or a
GGUF's converted parts are kept in).

- `gguf_index`: a GGUF file's tensor index (types, shapes, offsets, metadata); `gguf`: its quantized
  blocks read as they are; `gguf_model`: a llama-family causal LM built from those blocks.
- `qblocks`, `kblocks`: linear layers over GGUF blocks (Q4_0/Q4_1/Q8_0; Q4_K, Q6_K and Q5_0
  interleaved by groups of 8 rows) run by `native`, the compiled CPU kernels (`q4.cpp`,
  `kquants.cpp`, built once per machine: `native.library`).
- `quant`: weight formats of a loaded model (float32, bfloat16, int8, int4); `attention`: exact
  attention for a packed model's transformers forward; `fusion`: several linear layers as one;
  `compact`: each weight kept once, in its smallest exact form.
- `load_heap`: glibc's heap while a model loads (large temporaries given back as they are freed).
"""

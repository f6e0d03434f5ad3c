"""`make gpu-check` (tools/gpu_check.sh): the engine bench on a CUDA GPU with random weights, plus
ms per token against the weights' bandwidth roofline (every weight byte read once per token at the
GPU's peak memory bandwidth) and the verify-cost curve."""

from __future__ import annotations

import argparse
import sys

import torch

# Peak memory bandwidth (GB/s) of common data-centre GPUs, by a substring of the device name.
BANDWIDTH_GBS = {"H200": 4800, "H100": 3350, "A100": 2039, "L40S": 864, "L4": 300, "A10": 600}


def main(argv: list[str] | None = None) -> int:
    from spec_lsp.benchmarks import engine_bench
    from spec_lsp.benchmarks.prompts import bench_prompts
    from spec_lsp.engine.timing import pass_costs
    from spec_lsp.engine.weights.quant import weight_bytes
    from spec_lsp.presets import load_preset_engine

    p = argparse.ArgumentParser(prog="gpu-check")
    p.add_argument("--preset", default="qwen2.5-coder-7b")
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=64)
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 0
    name = torch.cuda.get_device_name()
    engine = load_preset_engine(args.preset, device="cuda", random_weights=True)
    prompts = bench_prompts(args.prompts)
    modes = engine_bench.run(engine, prompts, args.max_new_tokens, engine.options.k)
    print(f"{name}: weights {engine.weights}, tokenizer {engine.tokenizer_source}")
    print(engine_bench.format_table(modes))
    curve = pass_costs(engine.target, engine.options.k_max + 1)
    print("verify cost (ms per pass over n tokens): " + " ".join(f"{c:.1f}" for c in curve))
    gbytes = weight_bytes(engine.target) / 1e9
    peak = next((bw for key, bw in BANDWIDTH_GBS.items() if key in name), None)
    ms = 1000 / modes["target_only"]["decode_tokens_per_s"]
    if peak:
        floor = gbytes / peak * 1000
        print(
            f"target_only {ms:.1f} ms/token; roofline {floor:.1f} ms "
            f"({gbytes:.1f} GB at {peak} GB/s): {floor / ms:.0%} of peak"
        )
    else:
        print(
            f"target_only {ms:.1f} ms/token; {gbytes:.1f} GB of weights "
            f"(bandwidth of {name} unknown)"
        )
    exact = all(m["identical_to_target"] for k, m in modes.items() if k.startswith("speculative"))
    print(f"speculative modes identical to target_only: {'yes' if exact else 'NO'}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())

"""tools/bench_crossfile.py on the tiny preset (random weights: only the mechanics): it drives a
real server through both sessions, reports its figures, and the other file's chunk is in the
prompt while each keystroke prefills under 8 tokens."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "bench_crossfile.py"


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_crossfile", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


async def test_the_crossfile_bench_reports_under_8_tokens_prefilled_per_keystroke(
    tool: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    args = tool.parser().parse_args(
        ["--preset", "tiny", "--pace-ms", "10", "--pause-s", "0.2", "--max-tokens", "8"]
        + ["--lines", "1", "--timeout-s", "60"]
    )
    result = await tool.bench(args)
    tool.report(result)
    crossfile, baseline = result["runs"]["crossfile"], result["runs"]["baseline"]
    for run in (crossfile, baseline):
        assert run["keystrokes"] == 49 and len(run["points"]) == 1
        assert run["modelCalls"] > 0, "the keystrokes ran the model"
        assert run["prefilledPerCall"] < 8, run
    # invoices.py's chunk goes ahead of report.py: a longer first prompt, then the same per-key cost
    assert crossfile["firstPrefill"] > baseline["firstPrefill"] + 50
    assert crossfile["promptTokensPerCall"] > baseline["promptTokensPerCall"] + 50
    assert "per call" in capsys.readouterr().out
    assert tool.other_names("x = invoices.compute_", "invoice_total(a)", "") == [
        "compute_invoice_total"
    ]

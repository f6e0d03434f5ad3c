"""Each name says one thing (issue 26): no two classes of one name in the package, the contract's
name lists assigned in engine/api.py only, and no backend probed with getattr by the
completion service, the worker or the server."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spec_lsp"
CONTRACT = PACKAGE / "engine" / "api.py"
CONTRACT_NAMES = ("METHODS", "SPECULATION", "WEIGHT_FORMATS", "FORWARDS", "STOP_REASONS")


def modules() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(PACKAGE.rglob("*.py"))]


def test_no_two_classes_or_functions_of_the_package_share_a_public_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path, tree in modules():
        for node in tree.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and not node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(PACKAGE)))
    allowed = {"main", "register", "run"}  # each command module's entry points, by convention
    shared = {n: ps for n, ps in where.items() if len(ps) > 1 and n not in allowed}
    classes = {n for n, ps in shared.items() if n[0].isupper()}
    assert not classes, {n: shared[n] for n in classes}
    assert len(where["load_engine"]) == 1 and len(where["load_preset_engine"]) == 1


def test_the_contracts_name_lists_are_assigned_in_engine_api_only() -> None:
    for path, tree in modules():
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id in CONTRACT_NAMES:
                    assert path == CONTRACT, f"{path}: {target.id} is engine/api.py's"


def test_the_service_and_the_worker_probe_no_backend_with_getattr() -> None:
    seams = ("completion/", "worker.py", "server/", "stats.py")
    for path, tree in modules():
        if not str(path.relative_to(PACKAGE)).startswith(seams):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
                probed = ast.unparse(node.args[0]) if node.args else ""
                assert "backend" not in probed.lower(), f"{path}:{node.lineno}: {probed}"

"""The import graph of spec_lsp (issue 40 items 2 and 5): no circle anywhere, type-only imports
included, and the engine's two sub-packages below its core (`weights` reaches only `sources` and the
torch-free leaves `api` and `progress`; `sources` reaches nothing else of the engine and no torch).

The contracts in pyproject.toml hold the rooms' boundaries; these hold what a contract cannot say
without listing every module: a circle between any two modules, and "only these" rules."""

from __future__ import annotations

import grimp
import pytest

ENGINE = "spec_lsp.engine"
LEAVES = {f"{ENGINE}.api", f"{ENGINE}.progress"}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("spec_lsp", include_external_packages=True, cache_dir=None)


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each strongly connected set of two or more modules (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return found


def test_no_two_modules_import_each_other_even_through_others(graph: grimp.ImportGraph) -> None:
    assert circles(graph) == []


def test_the_circle_finder_finds_a_planted_circle() -> None:
    planted = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        planted.add_module(name)
    planted.add_import(importer="p.a", imported="p.b")
    planted.add_import(importer="p.b", imported="p.c")
    planted.add_import(importer="p.c", imported="p.a")
    assert circles(planted) == [["p.a", "p.b", "p.c"]]


def engine_imports(graph: grimp.ImportGraph, package: str) -> dict[str, set[str]]:
    """Each module of `package` -> what it imports of the engine outside `package`."""
    out = {}
    for module in graph.find_children(package) | graph.find_descendants(package) | {package}:
        imported = graph.find_modules_directly_imported_by(module)
        out[module] = {
            m for m in imported if m.startswith(ENGINE + ".") and not m.startswith(package)
        }
    return out


def test_weights_reach_only_sources_and_the_torch_free_leaves(graph: grimp.ImportGraph) -> None:
    allowed = LEAVES | set(graph.find_descendants(f"{ENGINE}.sources")) | {f"{ENGINE}.sources"}
    for module, imported in engine_imports(graph, f"{ENGINE}.weights").items():
        assert imported <= allowed, f"{module} imports {sorted(imported - allowed)}"


def test_sources_reach_nothing_else_of_the_engine_and_no_torch(graph: grimp.ImportGraph) -> None:
    for module, imported in engine_imports(graph, f"{ENGINE}.sources").items():
        assert imported == set(), f"{module} imports {sorted(imported)}"
        external = graph.find_modules_directly_imported_by(module)
        assert not {"torch", "transformers"} & external, module

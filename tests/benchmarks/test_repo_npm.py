"""`bench repo`'s npm set: the split of a JavaScript or TypeScript package into code and tests,
its imports resolved (ES and CommonJS), its holes mined with tree-sitter, the tarball fetched
from a local file (integrity checked, licence read from package.json), and the bench end to end
on the synthetic JavaScript package against the oracle server of test_repo_bench.py. The
packages are written by the test (tests/benchmarks/repo_fixture.py); no network."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from spec_lsp.benchmarks.repo import RepoRun, run_repo, sources
from spec_lsp.benchmarks.repo_editor import language_id
from spec_lsp.benchmarks.repo_holes import candidates, mine, read
from spec_lsp.benchmarks.repo_holes_js import imported_names, resolve
from spec_lsp.benchmarks.repo_npm import (
    NPM_PACKAGES,
    NpmPackage,
    PackageError,
    fetch,
    integrity_of,
    licence,
    local,
    prepare,
)
from spec_lsp.syntax.languages import new_parser, spec_for
from tests.benchmarks.repo_fixture import (
    JS_FILES,
    JS_INDEX_HOLES,
    TS_FILES,
    TS_HOLES,
    write_files,
)

ROOT = Path(__file__).resolve().parents[2]
INDEX = "lib/index.js"


def test_the_split_keeps_the_own_code_and_leaves_built_minified_and_vendored_files_out(
    tmp_path: Path,
) -> None:
    js = local(write_files(tmp_path / "strs", JS_FILES))
    assert js.code == ("lib/case.js", "lib/index.js", "lib/pad.js")  # dist/ beside lib/: built
    assert js.tests == ("lib/case.spec.js", "test/index.test.js")
    assert js.language == "javascript"
    ts = local(write_files(tmp_path / "shapes", TS_FILES))
    assert ts.code == (
        "src/format.ts",
        "src/geometry.ts",
        "src/index.ts",
        "src/units.ts",
        "src/view.tsx",
    )  # lib/ beside src/: built
    assert ts.tests == ("__tests__/format.ts",)


def test_relative_specifiers_resolve_with_extensions_index_files_and_ts_for_js() -> None:
    code = frozenset({"lib/case.js", "lib/index.js", "lib/pad.js", "src/units.ts"})
    assert resolve(INDEX, "./case", code) == "lib/case.js"
    assert resolve(INDEX, "./case.js", code) == "lib/case.js"
    assert resolve("test/a.test.js", "../lib", code) == "lib/index.js"  # lib/index.js
    assert resolve("src/view.tsx", "./units.js", code) == "src/units.ts"  # TypeScript's ESM
    assert resolve("lib/case.js", "../src/units", code) == "src/units.ts"
    assert resolve(INDEX, "./missing", code) is None
    assert resolve(INDEX, "path", code) is None  # a bare name: another package
    assert resolve(INDEX, "node:fs", code) is None
    assert resolve(INDEX, "./index", code) is None  # the file itself


def test_es_imports_and_requires_bind_names_to_the_package_files(tmp_path: Path) -> None:
    parser = new_parser(spec_for("javascript"))
    assert parser is not None
    source = local(write_files(tmp_path / "strs", JS_FILES))
    root = parser.parse(read(source.root, INDEX).encode()).root_node
    assert imported_names(root, INDEX, frozenset(source.code)) == {
        "pad": "lib/pad.js",  # import pad from
        "space": "lib/pad.js",  # { FILL as space }
        "padding": "lib/pad.js",  # import * as padding
        "upper": "lib/case.js",  # const { upper } = require(...)
        "down": "lib/case.js",  # { lower: down }
        "caseMod": "lib/case.js",  # const caseMod = require(...)
    }  # no `path` (a bare name), no `gone` (no such file)
    ts_parser = new_parser(spec_for("typescript"))
    assert ts_parser is not None
    ts = local(write_files(tmp_path / "shapes", TS_FILES))
    tree = ts_parser.parse(read(ts.root, "src/format.ts").encode()).root_node
    names = imported_names(tree, "src/format.ts", frozenset(ts.code))
    assert names == {"area": "src/geometry.ts", "label": "src/units.ts", "unit": "src/units.ts"}


def test_js_holes_start_at_the_first_imported_name_and_run_to_the_statement_end(
    tmp_path: Path,
) -> None:
    source = local(write_files(tmp_path / "strs", JS_FILES))
    text = read(source.root, INDEX)
    holes = candidates(source, INDEX, text)
    assert [(h.expected, h.names, h.imports) for h in holes] == JS_INDEX_HOLES
    for hole in holes:
        assert text[hole.start : hole.end] == hole.expected
        assert hole.filled(text, hole.expected) == text
        assert hole.file_imports == ("lib/case.js", "lib/pad.js")
    # the requires, the 4-line `table` and the statements of bare or missing imports are none
    assert not any("require" in h.expected or "'a', 2" in h.expected for h in holes)
    assert len({h.key for h in holes}) == len(holes)
    for path in ("lib/case.js", "lib/pad.js"):  # they import nothing of the package
        assert candidates(source, path, read(source.root, path)) == []


def test_ts_holes_use_the_typescript_and_tsx_grammars_and_leave_comments_out(
    tmp_path: Path,
) -> None:
    source = local(write_files(tmp_path / "shapes", TS_FILES))
    found = [
        (path, h.expected, h.names)
        for path in source.code
        for h in candidates(source, path, read(source.root, path))
    ]
    assert found == TS_HOLES
    view = candidates(source, "src/view.tsx", read(source.root, "src/view.tsx"))[0]
    assert view.imports == ("src/units.ts", "src/format.ts")
    assert candidates(source, "src/index.ts", read(source.root, "src/index.ts")) == []


def test_js_sampling_is_deterministic_for_a_seed_and_capped(tmp_path: Path) -> None:
    source = local(write_files(tmp_path / "shapes", TS_FILES))
    first = mine(source, 3, seed=1)
    assert len(first) == 3 and first == mine(source, 3, seed=1)
    every = mine(source, 100, seed=1)
    assert sorted(h.expected for h in every) == sorted(e for _, e, _ in TS_HOLES)
    assert first[:2][0].path != first[:2][1].path  # one file at a time, in turn
    orders = {tuple(h.key for h in mine(source, 4, seed=s)) for s in range(8)}
    assert len(orders) > 1  # the seed changes the draw


def test_documents_open_with_the_editors_language_ids() -> None:
    assert language_id("a/b.py") == "python"
    assert [language_id(f"x{s}") for s in (".js", ".mjs", ".cjs", ".jsx")] == [
        "javascript",
        "javascript",
        "javascript",
        "javascriptreact",
    ]
    assert (language_id("x.ts"), language_id("x.tsx")) == ("typescript", "typescriptreact")


def _tarball(folder: Path, files: dict[str, str]) -> Path:
    path = folder / "upload.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_tarball_is_downloaded_once_its_integrity_checked_and_unpacked_by_label(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from spec_lsp.benchmarks import repo_npm

    upload = _tarball(tmp_path, JS_FILES)
    package = NpmPackage("strs", "1.0.0", integrity_of(upload.read_bytes()))
    assert package.integrity.startswith("sha512-") and len(package.integrity) == 95
    said: list[str] = []
    cache = tmp_path / "cache"
    archive = fetch(package, cache / "npm", said.append, url=upload.as_uri())
    assert len(said) == 1 and said[0].startswith("downloading strs-1.0.0 (")
    monkeypatch.setattr(repo_npm, "tarball_url", lambda _p: upload.as_uri())
    tree = prepare(package, cache, said.append)
    assert len(said) == 1  # cached: nothing downloaded again
    assert tree.root == cache / "npm" / "src" / "strs-1.0.0" / "package"
    assert archive.parent == cache / "npm" / "tarballs"
    assert (tree.label, tree.license, tree.language) == ("strs-1.0.0", "MIT", "javascript")
    assert tree.code == ("lib/case.js", "lib/index.js", "lib/pad.js")
    wrong = NpmPackage("strs", "1.0.0", integrity_of(b"another tarball"))
    with pytest.raises(PackageError, match="integrity"):
        fetch(wrong, tmp_path / "other", said.append, url=upload.as_uri())
    assert not (tmp_path / "other" / "tarballs" / "strs-1.0.0.tgz").exists()  # not kept


def test_a_package_without_a_permissive_licence_is_refused(tmp_path: Path) -> None:
    meta = tmp_path / "package.json"
    for refused in ({"license": "GPL-3.0-only"}, {"license": "UNLICENSED"}, {}):
        meta.write_text(json.dumps(refused))
        with pytest.raises(PackageError, match="no permissive licence"):
            licence(tmp_path)
    meta.unlink()
    with pytest.raises(PackageError, match="no permissive licence"):
        licence(tmp_path)
    meta.write_text(json.dumps({"license": "(MIT OR Apache-2.0)"}))
    assert licence(tmp_path) == "(MIT OR Apache-2.0)"
    meta.write_text(json.dumps({"licenses": [{"type": "BSD-3-Clause"}]}))
    assert licence(tmp_path) == "BSD-3-Clause"


def test_the_pinned_npm_set_is_well_formed_and_named_by_packages() -> None:
    assert 8 <= len(NPM_PACKAGES) <= 12
    assert len({p.name for p in NPM_PACKAGES}) == len(NPM_PACKAGES)
    for package in NPM_PACKAGES:
        assert package.integrity.startswith("sha512-") and len(package.integrity) == 95
    with pytest.raises(ValueError, match="not in the npm list"):
        sources(["toolz"], [], sys.stderr, "npm")  # a PyPI package
    with pytest.raises(ValueError, match="no package set"):
        sources([], [], sys.stderr, "cargo")


def test_the_bench_is_exact_on_the_js_package_against_an_oracle_and_runs_no_tests(
    tmp_path: Path, monkeypatch: Any
) -> None:
    from spec_lsp.benchmarks import repo

    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
    code += "from tests.benchmarks.test_repo_bench import oracle_main; oracle_main()"
    monkeypatch.setattr(repo, "default_server_cmd", lambda _preset: [sys.executable, "-c", code])
    root = write_files(tmp_path / "strs", JS_FILES)
    plan = RepoRun(
        preset="oracle", rows=("ring", "in_file"), holes=20, llama_server="off", package_set="npm"
    )
    report = run_repo(plan, [], [root], log=sys.stderr)
    (package,) = report["packages"]
    assert package["holes"] == len(JS_INDEX_HOLES) and package["tests_run"] is False
    assert report["test_runs"] == 0  # tests=True, yet an npm package's tests are never run
    for row, figures in report["rows"].items():
        assert figures["exact"] == len(JS_INDEX_HOLES), row
        assert figures["pass_at_1"] is None and figures["with_tests"] == 0

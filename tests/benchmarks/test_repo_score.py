"""`bench repo`'s scores on hand-made answers, its packages' fetching and checking (a local
archive, no network), and pass@1 by the synthetic package's own tests in the fenced child."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from spec_lsp.benchmarks.repo_holes import candidates, read
from spec_lsp.benchmarks.repo_packages import Package, PackageError, fetch, licence, local, unpack
from spec_lsp.benchmarks.repo_score import cut, identifier_match, score, summarize
from spec_lsp.benchmarks.repo_tests import Judge
from tests.benchmarks.repo_fixture import write_package

EXPECTED = "perimeter(width, height)"


def test_exact_match_ignores_trailing_spaces_and_what_follows_the_statement() -> None:
    assert score("k", EXPECTED + "  \n    return x\n", EXPECTED, None).exact
    assert score("k", EXPECTED + "\n", EXPECTED, None).longer is False
    assert score("k", EXPECTED + "\nmore", EXPECTED, None).longer is True
    assert not score("k", "perimeter(height, width)", EXPECTED, None).exact
    assert cut("a(\n  b)\nc", "a(\n  b)") == "a(\n  b)"


def test_edit_similarity_and_identifier_match_grade_a_near_miss() -> None:
    near = score("k", "perimeter(width, depth)", EXPECTED, None)
    assert 0.7 < near.similarity < 1.0
    assert near.identifiers == pytest.approx(2 / 3, abs=1e-4) and not near.all_identifiers
    assert score("k", "", EXPECTED, None).similarity == 0.0
    assert identifier_match("x = perimeter(height, width)", EXPECTED) == 1.0  # order aside
    assert identifier_match("anything", "1 + 2") == 1.0  # nothing to match
    assert identifier_match("return x", "return value") == 0.0  # keywords are not identifiers


def test_summary_takes_pass_at_1_over_the_holes_with_tests_only() -> None:
    scores = [
        score("a", EXPECTED, EXPECTED, True, 10.0),
        score("b", "x", EXPECTED, False, 30.0),
        score("c", "", EXPECTED, None, 20.0),
    ]
    figures = summarize(scores)
    assert figures["holes"] == 3 and figures["exact"] == 1
    assert figures["exact_match"] == pytest.approx(1 / 3, abs=1e-4)
    assert figures["with_tests"] == 2 and figures["pass_at_1"] == 0.5
    assert figures["empty"] == 1 and figures["latency_p50_ms"] == 20.0
    assert summarize([score("a", "", EXPECTED, None)])["pass_at_1"] is None


def _archive(folder: Path, files: dict[str, str]) -> Path:
    path = folder / "upload.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_package_is_downloaded_once_checked_unpacked_and_its_licence_read(
    tmp_path: Path,
) -> None:
    info = "Metadata-Version: 2.4\nName: demo\nLicense-Expression: MIT\n\nA demo.\n"
    upload = _archive(tmp_path, {"demo-1.0/PKG-INFO": info, "demo-1.0/demo/a.py": "x = 1\n"})
    digest = hashlib.sha256(upload.read_bytes()).hexdigest()
    package = Package("demo", "1.0", digest)
    said: list[str] = []
    cache = tmp_path / "cache"
    archive = fetch(package, cache, said.append, url=upload.as_uri())
    assert len(said) == 1 and said[0].startswith("downloading demo-1.0 ")
    assert fetch(package, cache, said.append, url=upload.as_uri()) == archive
    assert len(said) == 1  # cached: nothing downloaded again
    root = unpack(archive, cache / "src")
    assert (root / "demo" / "a.py").read_text() == "x = 1\n"
    assert licence(root) == "MIT"
    wrong = Package("demo", "1.0", "0" * 64)
    with pytest.raises(PackageError, match="sha256"):
        fetch(wrong, tmp_path / "other", said.append, url=upload.as_uri())


def test_a_package_without_a_permissive_licence_is_refused(tmp_path: Path) -> None:
    (tmp_path / "PKG-INFO").write_text("Name: x\nLicense: GPL-3.0-only\n\nbody MIT\n")
    with pytest.raises(PackageError, match="no permissive licence"):
        licence(tmp_path)
    (tmp_path / "PKG-INFO").write_text("Name: x\nClassifier: License :: OSI Approved :: BSD\n")
    assert licence(tmp_path) == "BSD"


def test_pass_at_1_runs_the_packages_own_tests_on_the_filled_file(tmp_path: Path) -> None:
    source = local(write_package(tmp_path))
    judge = Judge(timeout_s=60)
    assert judge.runnable(source, remember=False)
    path = "src/mathy/report.py"
    text = read(source.root, path)
    hole = candidates(source, path, text)[2]  # perimeter(width, height)
    runs = judge.runs
    assert judge.passes(source, path, text, hole.filled(text, hole.expected))
    assert judge.runs == runs  # the original text passes without a run
    wrong = hole.filled(text, "perimeter(width, width)")
    assert not judge.passes(source, path, text, wrong)
    assert not judge.passes(source, path, text, wrong)
    assert judge.runs == runs + 1  # one run per distinct filled text
    assert judge.passes(source, path, text, hole.filled(text, "perimeter(height, width)"))

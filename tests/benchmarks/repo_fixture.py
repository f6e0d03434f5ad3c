"""A tiny synthetic package for `bench repo`'s tests, written into a folder by the test: four
files of code that import from each other in every way the miner resolves (relative, absolute,
a submodule, an alias), and a test file that checks them. No network, no registry."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "src/mathy/__init__.py": '"""Mathy."""\n\nfrom .shapes import area\n\n__all__ = ["area"]\n',
    "src/mathy/shapes.py": (
        "def area(width, height):\n"
        "    return width * height\n"
        "\n"
        "\n"
        "def perimeter(width, height):\n"
        "    return 2 * (width + height)\n"
        "\n"
        "\n"
        "class Box:\n"
        "    def __init__(self, width, height):\n"
        "        self.width = width\n"
        "        self.height = height\n"
    ),
    "src/mathy/units.py": 'UNIT = "m"\n\n\ndef fmt(value, power=1):\n'
    '    return f"{value} {UNIT}{power}"\n',
    "src/mathy/report.py": (
        "from mathy.shapes import Box, perimeter\n"
        "from . import units\n"
        "from .shapes import area as surface\n"
        "\n"
        "\n"
        "def describe(width, height):\n"
        "    box = Box(width, height)\n"
        "    size = surface(box.width, box.height)\n"
        "    edge = perimeter(width, height)\n"
        "    return units.fmt(size, power=2) + ', ' + units.fmt(edge)\n"
        "\n"
        "\n"
        "def total(boxes):\n"
        "    sizes = [surface(b.width, b.height) for b in boxes]\n"
        "    return units.fmt(sum(sizes), power=2)\n"
    ),
    "tests/test_report.py": (
        "from mathy.report import describe, total\n"
        "from mathy.shapes import Box\n"
        "\n"
        "\n"
        "def test_describe():\n"
        '    assert describe(2, 3) == "6 m2, 10 m1"\n'
        "\n"
        "\n"
        "def test_total():\n"
        '    assert total([Box(1, 2), Box(2, 2)]) == "6 m2"\n'
    ),
    "setup.py": "from setuptools import setup\n\nsetup()\n",
}

# The holes `candidates` finds in report.py, in document order: (expected text, names used).
REPORT_HOLES = [
    ("Box(width, height)", ("Box",)),
    ("surface(box.width, box.height)", ("surface",)),
    ("perimeter(width, height)", ("perimeter",)),
    ("units.fmt(size, power=2) + ', ' + units.fmt(edge)", ("units",)),
    ("surface(b.width, b.height) for b in boxes]", ("surface",)),
    ("units.fmt(sum(sizes), power=2)", ("units",)),
]


def write_package(folder: Path) -> Path:
    """The package's files under `folder/mathy-1.0`; returns that root."""
    root = folder / "mathy-1.0"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root

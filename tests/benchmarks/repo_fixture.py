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


# The npm set's synthetic packages (tests/benchmarks/test_repo_npm.py): a JavaScript one whose
# lib/index.js imports its neighbours with ES imports (default, named, aliased, namespace) and
# CommonJS requires (destructured, aliased, whole), beside files the split leaves out (a built
# copy, a minified file, node_modules, a config, type declarations) and its tests; and a
# TypeScript one with a `.js` specifier for a `.ts` file, a type-only import, a semicolon-less
# statement with a trailing comment and a .tsx view.

JS_FILES = {
    "package.json": '{"name": "strs", "version": "1.0.0", "license": "MIT"}\n',
    "lib/case.js": (
        "'use strict';\n"
        "\n"
        "function upper(text) {\n"
        "  return text.toUpperCase();\n"
        "}\n"
        "\n"
        "function lower(text) {\n"
        "  return text.toLowerCase();\n"
        "}\n"
        "\n"
        "module.exports = { upper, lower };\n"
    ),
    "lib/pad.js": (
        "export const FILL = ' ';\n"
        "\n"
        "export default function pad(text, width) {\n"
        "  return text + FILL.repeat(Math.max(0, width - text.length));\n"
        "}\n"
    ),
    "lib/index.js": (
        "import pad, { FILL as space } from './pad.js';\n"
        "import * as padding from './pad';\n"
        "const { upper, lower: down } = require('./case');\n"
        "const caseMod = require('./case.js');\n"
        "const path = require('path');\n"
        "const gone = require('./missing');\n"
        "\n"
        "export function title(word, width) {\n"
        "  const head = upper(word[0]);\n"
        "  return pad(head + down(word.slice(1)), width);\n"
        "}\n"
        "\n"
        "export function shout(words) {\n"
        "  return words.map((w) => caseMod.upper(w)).join(space);\n"
        "}\n"
        "\n"
        "export function each(list) {\n"
        "  list.forEach((n) => { return upper(n); });\n"
        "}\n"
        "\n"
        "export const table = [\n"
        "  pad('a', 2),\n"
        "  upper('b'),\n"
        "];\n"
        "\n"
        "function check(width) {\n"
        "  if (width < 0) throw new RangeError('width');\n"
        "  path.join(gone, 'b');\n"
        "  return padding.FILL;\n"
        "}\n"
    ),
    "lib/types.d.ts": "export declare function upper(text: string): string;\n",
    "lib/pad.min.js": "export const FILL=' ';\n",
    "dist/index.js": "const { upper } = require('../lib/case');\nmodule.exports = upper('x');\n",
    "node_modules/dep/index.js": "const up = require('./up');\nup.go();\n",
    "rollup.config.js": "import pad from './lib/pad.js';\nexport default pad('', 1);\n",
    "test/index.test.js": "import { title } from '../lib';\ntitle('ab', 3);\n",
    "lib/case.spec.js": "const { upper } = require('./case');\nupper('a');\n",
}

# The holes `candidates` finds in lib/index.js, in document order: (expected, names, imports).
JS_INDEX_HOLES = [
    ("upper(word[0]);", ("upper",), ("lib/case.js",)),
    ("pad(head + down(word.slice(1)), width);", ("pad", "down"), ("lib/pad.js", "lib/case.js")),
    ("caseMod.upper(w)).join(space);", ("caseMod", "space"), ("lib/case.js", "lib/pad.js")),
    ("upper(n); });", ("upper",), ("lib/case.js",)),  # the callback's `return`: the same start
    ("padding.FILL;", ("padding",), ("lib/pad.js",)),
]

TS_FILES = {
    "package.json": '{"name": "shapes", "version": "2.0.0", "license": {"type": "Apache-2.0"}}\n',
    "src/geometry.ts": (
        "export interface Size {\n"
        "  width: number\n"
        "  height: number\n"
        "}\n"
        "\n"
        "export function area(size: Size): number {\n"
        "  return size.width * size.height\n"
        "}\n"
    ),
    "src/units.ts": (
        "export const UNIT = 'px'\n"
        "\n"
        "export function label(value: number): string {\n"
        "  return value + UNIT\n"
        "}\n"
    ),
    "src/format.ts": (
        "import type { Size } from './geometry.js'\n"
        "import { area } from './geometry.js'\n"
        "import { label, UNIT as unit } from './units'\n"
        "\n"
        "export function describe(size: Size): string {\n"
        "  const total: number = area(size)\n"
        "  return label(total) // as CSS writes it\n"
        "}\n"
        "\n"
        "export const suffix = unit\n"
    ),
    "src/view.tsx": (
        "import { describe } from './format'\n"
        "import * as units from './units'\n"
        "\n"
        "export function View(props: { size: { width: number; height: number } }) {\n"
        "  return <span title={units.UNIT}>{describe(props.size)}</span>\n"
        "}\n"
    ),
    "src/index.ts": "export { area } from './geometry'\nexport * from './format'\n",
    "lib/index.js": "exports.area = (s) => s.width * s.height;\n",  # built beside src/
    "__tests__/format.ts": "import { describe } from '../src/format'\ndescribe({width: 1})\n",
}

# The holes of the TypeScript package, file by file in path order: (path, expected, names).
TS_HOLES = [
    ("src/format.ts", "area(size)", ("area",)),
    ("src/format.ts", "label(total)", ("label",)),  # the comment is no part of it
    ("src/format.ts", "unit", ("unit",)),
    ("src/view.tsx", "units.UNIT}>{describe(props.size)}</span>", ("units", "describe")),
]


def write_files(folder: Path, files: dict[str, str]) -> Path:
    """`files` written under `folder`; returns `folder`."""
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder

"""Table-driven trimming cases, per language: a source with a cursor (█), what a model produced
there, and the suggestion that should be shown (None: nothing)."""

from __future__ import annotations

import pytest

from spec_lsp.syntax import completion_mode, trim_completion

CURSOR = "█"

# (id, languageId, source with █, raw completion, expected suggestion)
CASES: list[tuple[str, str, str, str, str | None]] = [
    # -- Python: blocks and dedents --------------------------------------------------------------
    (
        "py-body-stops-at-dedent",
        "python",
        "def add(a, b):\n    █\n\n\ndef sub(a, b):\n    return a - b\n",
        "return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
        "return a + b",
    ),
    (
        "py-multiline-body-keeps-nested-block",
        "python",
        "def total(xs):\n    █\n",
        "result = 0\n    for x in xs:\n        result += x\n    return result\n\n\nprint(total([1]))",
        "result = 0\n    for x in xs:\n        result += x\n    return result",
    ),
    (
        "py-after-colon-body-on-new-lines",
        "python",
        "class Point:\n    def __init__(self, x, y):█\n",
        "\n        self.x = x\n        self.y = y\n\n    def norm(self):\n        return 0",
        "\n        self.x = x\n        self.y = y",
    ),
    (
        "py-if-else-kept-together-at-eof",
        "python",
        "def sign(x):\n    █",
        "if x < 0:\n        return -1\n    else:\n        return 1\nprint(sign(3))",
        "if x < 0:\n        return -1\n    else:\n        return 1",
    ),
    (
        "py-next-line-not-repeated",
        "python",
        "def load(path):\n    █\n    return data\n",
        "with open(path) as f:\n        data = f.read()\n    return data\n",
        "with open(path) as f:\n        data = f.read()",
    ),
    (
        "py-existing-body-not-repeated",
        "python",
        "def area(r):█\n    return 3.14 * r * r\n",
        "\n    return 3.14 * r * r\n",
        None,
    ),
    (
        "py-single-line-cut-at-newline",
        "python",
        "import os\npath = █\nprint(path)\n",
        'os.path.join("a", "b")\nprint(path)\n',
        'os.path.join("a", "b")',
    ),
    (
        "py-dict-literal-closing-bracket-in-suffix",
        "python",
        'config = {"debug": True, █}\n',
        '"verbose": False}\n',
        '"verbose": False',
    ),
    (
        "py-argument-list-closer-not-repeated",
        "python",
        "result = max(█)\n",
        "values, key=len)\n",
        "values, key=len",
    ),
    (
        "py-nested-call-keeps-its-own-closer",
        "python",
        "print(█)\n",
        "len(items))",
        "len(items)",
    ),
    (
        "py-string-closing-quote-in-suffix",
        "python",
        'name = "█"\n',
        'world"\n',
        "world",
    ),
    (
        "py-comment-completes-one-line",
        "python",
        "# Compute the █\n",
        "average of the list\nx = 1",
        "average of the list",
    ),
    (
        "py-whitespace-completion-is-dropped",
        "python",
        "x = █\n",
        "   \n\n",
        None,
    ),
    (
        "py-mid-word-gives-nothing",
        "python",
        "val█ue = 3\n",
        "id",
        None,
    ),
    (
        "py-unbalanced-extra-closer-is-cut",
        "python",
        "total = sum(█\n",
        "x for x in xs))\n",
        "x for x in xs)",
    ),
    # -- JavaScript / TypeScript / TSX --------------------------------------------------------------
    (
        "js-function-body-stops-at-closing-brace",
        "javascript",
        "function add(a, b) {\n  █\n}\n",
        "return a + b;\n}\n\nfunction sub(a, b) {\n  return a - b;\n}\n",
        "return a + b;",
    ),
    (
        "js-object-auto-closed-brace",
        "javascript",
        "const config = {█};\n",
        "port: 8080, host: 'localhost' };",
        "port: 8080, host: 'localhost'",
    ),
    (
        "js-object-multiline-keeps-properties",
        "javascript",
        "const config = {\n  █\n};\n",
        "port: 8080,\n  host: 'localhost',\n};\n\nexport default config;\n",
        "port: 8080,\n  host: 'localhost',",
    ),
    (
        "js-arrow-function-single-line",
        "javascript",
        "const double = (x) => █\n",
        "x * 2;\nconst triple = (x) => x * 3;\n",
        "x * 2;",
    ),
    (
        "js-arrow-body-block",
        "javascript",
        "items.forEach((item) => {\n  █\n});\n",
        "console.log(item);\n});\n",
        "console.log(item);",
    ),
    (
        "js-template-literal-closer-in-suffix",
        "javascript",
        "const msg = `Hello, ${█}`;\n",
        "name}`;\n",
        "name",
    ),
    (
        "ts-interface-members",
        "typescript",
        "interface User {\n  █\n}\n",
        "id: number;\n  name: string;\n}\n\ninterface Admin extends User {}\n",
        "id: number;\n  name: string;",
    ),
    (
        "ts-typed-call-arguments",
        "typescript",
        "const user: User = createUser(█);\n",
        "1, 'ada');\n",
        "1, 'ada'",
    ),
    (
        "tsx-jsx-child-element",
        "typescriptreact",
        "export function App() {\n  return (\n    <div>\n      █\n    </div>\n  );\n}\n",
        "<h1>Hello</h1>\n    </div>\n  );\n}\n",
        "<h1>Hello</h1>",
    ),
    # -- Rust ---------------------------------------------------------------------------------------
    (
        "rust-match-arms-stop-before-closing-brace",
        "rust",
        "fn code(c: Cmd) -> i32 {\n    match c {\n        █\n    }\n}\n",
        "Cmd::Start => 1,\n        Cmd::Stop => 2,\n    }\n}\n",
        "Cmd::Start => 1,\n        Cmd::Stop => 2,",
    ),
    (
        "rust-match-arm-single-line",
        "rust",
        "fn f(x: Option<i32>) -> i32 {\n    match x {\n        Some(v) => █\n        None => 0,\n    }\n}\n",
        "v * 2,\n        None => 0,\n",
        "v * 2,",
    ),
    (
        "rust-lifetime-is-not-a-quote",
        "rust",
        "fn first<'a>(xs: &'a [u8]) -> &'a u8 {\n    █\n}\n",
        "&xs[0]\n}\n",
        "&xs[0]",
    ),
    (
        "rust-vec-macro-closer-in-suffix",
        "rust",
        "fn main() {\n    let v = vec![1, 2█];\n}\n",
        ', 3];\n    println!("{:?}", v);',
        ", 3",
    ),
    # -- Go -----------------------------------------------------------------------------------------
    (
        "go-if-block-body",
        "go",
        "func load() error {\n\terr := run()\n\tif err != nil {\n\t\t█\n\t}\n\treturn nil\n}\n",
        "return err\n\t}\n\treturn nil\n}\n",
        "return err",
    ),
    (
        "go-function-without-closing-brace-gets-one",
        "go",
        "package main\n\nfunc add(a, b int) int {\n\t█",
        "return a + b\n}\n\nfunc sub(a, b int) int {\n\treturn a - b\n}\n",
        "return a + b\n}",
    ),
    # -- Java, C, C++ -------------------------------------------------------------------------------
    (
        "java-method-body",
        "java",
        "class Box {\n    int size;\n    int getSize() {\n        █\n    }\n}\n",
        "return size;\n    }\n\n    void setSize(int s) {\n        size = s;\n    }\n}\n",
        "return size;",
    ),
    (
        "c-for-loop-body",
        "c",
        "int sum(int *xs, int n) {\n    int s = 0;\n    for (int i = 0; i < n; i++) {\n        █\n    }\n    return s;\n}\n",
        "s += xs[i];\n    }\n    return s;\n}\n",
        "s += xs[i];",
    ),
    (
        "cpp-call-inside-arguments",
        "cpp",
        "#include <vector>\nint main() {\n    std::vector<int> v;\n    v.push_back(█);\n}\n",
        "42);\n    return 0;",
        "42",
    ),
    # -- mid-line ------------------------------------------------------------------------------------
    (
        "py-mid-line-before-auto-closed-pair",
        "python",
        "def f(a):\n    return compute(a, █)\n",
        "b=2)\n",
        "b=2",
    ),
    (
        "js-mid-line-with-code-to-the-right-gives-nothing",
        "javascript",
        "if (user && █) {\n  go();\n}\n",
        "user.active",
        None,
    ),
    (
        "c-string-argument-mid-line",
        "c",
        'int main(void) {\n    printf("%d\\n", █);\n}\n',
        "argc);\n    return 0;",
        "argc",
    ),
    # -- odd inputs ---------------------------------------------------------------------------------
    (
        "unparseable-python-file-still-trims-structurally",
        "python",
        "def broken(:\n    x = [1, 2\n\ndef f():\n    █\n",
        "return 1\nprint('x')",
        "return 1",
    ),
    (
        "unknown-language-uses-line-rules",
        "cobol",
        "DISPLAY █\n",
        "'HELLO'.\nSTOP RUN.",
        "'HELLO'.",
    ),
    (
        "unknown-language-multiline-stops-at-dedent",
        "elixir",
        "defmodule M do\n  def f do\n    █\n  end\nend\n",
        ":ok\n  end\nend\n",
        ":ok",
    ),
]


def _split(source: str) -> tuple[str, str]:
    assert source.count(CURSOR) == 1, "one cursor per case"
    prefix, suffix = source.split(CURSOR)
    return prefix, suffix


@pytest.mark.parametrize(
    ("language", "source", "completion", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_trimmed_suggestion_matches_expected(
    language: str, source: str, completion: str, expected: str | None
) -> None:
    prefix, suffix = _split(source)
    assert trim_completion(language, prefix, suffix, completion) == expected


MODES: list[tuple[str, str, str, str]] = [
    ("py-empty-body-is-multi", "python", "def f():\n    █\n", "multi"),
    ("py-after-colon-is-multi", "python", "for x in xs:█\n", "multi"),
    ("py-end-of-file-blank-line-is-multi", "python", "x = 1\n\n█", "multi"),
    (
        "py-blank-line-inside-body-is-single",
        "python",
        "def f():\n    a = 1\n    █\n    b = 2\n",
        "single",
    ),
    ("py-end-of-statement-line-is-single", "python", "x = █\ny = 2\n", "single"),
    ("py-mid-word-is-none", "python", "pri█nt(x)\n", "none"),
    ("py-code-right-of-cursor-is-none", "python", "foo(█a, b)\n", "none"),
    ("py-before-auto-closed-paren-is-single", "python", "foo(█)\n", "single"),
    ("py-dict-colon-is-not-a-block", "python", 'd = {"a":█}\n', "single"),
    ("js-after-brace-is-multi", "javascript", "if (ok) {█\n}\n", "multi"),
    ("js-inside-auto-closed-braces-is-multi", "javascript", "function f() {█}\n", "multi"),
    ("js-jsx-closing-tag-right-is-none", "javascriptreact", "const a = <b>█</b>;\n", "none"),
    ("rust-empty-fn-body-is-multi", "rust", "fn main() {\n    █\n}\n", "multi"),
    ("go-string-is-single", "go", 'fmt.Println("hel█")\n', "single"),
    ("py-docstring-is-single", "python", 'def f():\n    """Ret█\n    """\n', "single"),
]


@pytest.mark.parametrize(
    ("language", "source", "expected"), [m[1:] for m in MODES], ids=[m[0] for m in MODES]
)
def test_completion_mode_matches_expected(language: str, source: str, expected: str) -> None:
    prefix, suffix = _split(source)
    assert completion_mode(language, prefix, suffix) == expected


PADDING = {
    "python": "def pad_{i}(x):\n    return x + {i}\n\n\n",
    "javascript": "function pad_{i}(x) {{\n  return x + {i};\n}}\n\n",
    "rust": "fn pad_{i}(x: i32) -> i32 {{\n    x + {i}\n}}\n\n",
    "go": "func pad_{i}(x int) int {{\n\treturn x + {i}\n}}\n\n",
}


@pytest.mark.parametrize(
    ("language", "source", "completion", "expected"),
    [
        c[1:]
        for c in CASES
        if c[1] in PADDING and c[2].startswith(("def", "fn", "func", "function"))
    ],
    ids=[
        c[0]
        for c in CASES
        if c[1] in PADDING and c[2].startswith(("def", "fn", "func", "function"))
    ],
)
def test_large_file_trims_like_a_small_one(
    language: str, source: str, completion: str, expected: str | None
) -> None:
    # 40 KB of unrelated functions on both sides: the parse check then works on a window.
    pad = "".join(PADDING[language].format(i=i) for i in range(600))
    prefix, suffix = _split(source)
    assert len(pad) > 20_000
    assert trim_completion(language, pad + prefix, suffix + "\n" + pad, completion) == expected


def test_single_line_mode_keeps_a_call_spread_over_lines() -> None:
    prefix, suffix = "def f(parser):\n    x = 1\n    ", "\n    return parser\n"
    raw = (
        "parser.add_argument(\n        '--name',\n        default=None,\n    )\n    return parser\n"
    )
    assert completion_mode("python", prefix, suffix) == "single"
    assert trim_completion("python", prefix, suffix, raw) == raw[: raw.index(")") + 1]


def test_unterminated_string_at_the_cursor_ends_with_its_line() -> None:
    assert trim_completion("python", 'x = "hel', "\n", 'lo"\ny = 1\n') == 'lo"'
    assert trim_completion("javascript", "const s = 'a", "\n", "bc\nfoo();") == "bc"


def test_single_line_on_a_blank_line_skips_leading_blank_lines() -> None:
    prefix, suffix = "def f(x):\n    y = 1\n    ", "\n    return y\n"
    assert trim_completion("python", prefix, suffix, "\n    y += x\n    z = 2\n") == "\n    y += x"


def test_single_line_inside_a_docstring_ends_at_the_first_line_break() -> None:
    prefix, suffix = 'def f(x):\n    """Return ', '\n    """\n'
    assert (
        trim_completion("python", prefix, suffix, "x doubled.\n\n    x: a number") == "x doubled."
    )

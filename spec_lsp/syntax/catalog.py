"""The languages the syntax layer knows, each a `LanguageSpec`: those with a grammar package that
loads offline (`tree-sitter-<lang>` on PyPI), and those with lexical rules only (no cut that needs
a parse). `PLAIN` is for a language not listed here.
"""

from __future__ import annotations

from spec_lsp.syntax.langspec import LanguageSpec

_C_LIKE_CONT = frozenset({"else", "catch", "finally", "while"})

_GENERIC_CONT = frozenset(
    {"else", "elif", "elsif", "elseif", "catch", "finally", "except", "then", "in", "where"}
    | {"when", "rescue", "ensure", "with", "and", "or", "do", "of"}
)
_GENERIC_END = frozenset({"end", "fi", "done", "esac"})

PLAIN = LanguageSpec(
    name="plain",
    grammar=None,
    line_comments=("#", "//"),
    quotes=('"', "'", "`"),
    continuation_keywords=_GENERIC_CONT,
    end_words=_GENERIC_END,
    import_prefixes=("import ", "from ", "#include", "use ", "require"),
)


def _text_only(name: str, **fields: object) -> LanguageSpec:
    """A language without a grammar package: its lexical rules, the generic keywords."""
    base: dict[str, object] = {
        "grammar": None,
        "continuation_keywords": _GENERIC_CONT,
        "end_words": _GENERIC_END,
    }
    return LanguageSpec(name=name, **{**base, **fields})  # type: ignore[arg-type]


def _grammar(name: str, module: str, func: str = "language", **fields: object) -> LanguageSpec:
    return LanguageSpec(name=name, grammar=(module, func), **fields)  # type: ignore[arg-type]


_JS_SCOPES = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "arrow_function",
        "method_definition",
        "class_declaration",
        "abstract_class_declaration",
        "class",
        "interface_declaration",
        "internal_module",
        "module",
    }
)


def _js(name: str, module: str, func: str) -> LanguageSpec:
    return LanguageSpec(
        name=name,
        grammar=(module, func),
        quotes=('"', "'", "`"),
        multiline_quotes=frozenset({"`"}),
        continuation_keywords=_C_LIKE_CONT,
        scope_types=_JS_SCOPES,
        import_types=frozenset({"import_statement"}),
        import_prefixes=("import ",),
    )


SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        name="python",
        grammar=("tree_sitter_python", "language"),
        line_comments=("#",),
        block_comment=None,
        quotes=('"""', "'''", '"', "'"),
        multiline_quotes=frozenset({'"""', "'''"}),
        indent_blocks=True,
        block_keywords=frozenset(
            {"def", "class", "if", "elif", "else", "for", "while", "try", "except", "finally"}
            | {"with", "async", "match", "case", "lambda"}
        ),
        continuation_keywords=frozenset({"elif", "else", "except", "finally", "case"}),
        scope_types=frozenset({"function_definition", "class_definition"}),
        import_types=frozenset(
            {"import_statement", "import_from_statement", "future_import_statement"}
        ),
        import_prefixes=("import ", "from "),
    ),
    "javascript": _js("javascript", "tree_sitter_javascript", "language"),
    "typescript": _js("typescript", "tree_sitter_typescript", "language_typescript"),
    "tsx": _js("tsx", "tree_sitter_typescript", "language_tsx"),
    "rust": LanguageSpec(
        name="rust",
        grammar=("tree_sitter_rust", "language"),
        quotes=('"', "'"),
        multiline_quotes=frozenset({'"'}),
        strict_char_quote=True,
        continuation_keywords=frozenset({"else"}),
        scope_types=frozenset(
            {"function_item", "impl_item", "trait_item", "mod_item", "closure_expression"}
        ),
        import_types=frozenset({"use_declaration", "extern_crate_declaration"}),
        import_prefixes=("use ", "extern crate "),
    ),
    "go": LanguageSpec(
        name="go",
        grammar=("tree_sitter_go", "language"),
        quotes=('"', "'", "`"),
        multiline_quotes=frozenset({"`"}),
        continuation_keywords=frozenset({"else"}),
        scope_types=frozenset({"function_declaration", "method_declaration", "func_literal"}),
        import_types=frozenset({"package_clause", "import_declaration"}),
        import_prefixes=("package ", "import "),
    ),
    "java": LanguageSpec(
        name="java",
        grammar=("tree_sitter_java", "language"),
        multiline_quotes=frozenset({'"""'}),
        quotes=('"""', '"', "'"),
        continuation_keywords=_C_LIKE_CONT,
        scope_types=frozenset(
            {"class_declaration", "interface_declaration", "enum_declaration"}
            | {"record_declaration", "method_declaration", "constructor_declaration"}
        ),
        import_types=frozenset({"package_declaration", "import_declaration"}),
        import_prefixes=("package ", "import "),
    ),
    "c": LanguageSpec(
        name="c",
        grammar=("tree_sitter_c", "language"),
        continuation_keywords=frozenset({"else", "while"}),
        scope_types=frozenset({"function_definition", "struct_specifier"}),
        import_types=frozenset({"preproc_include"}),
        import_prefixes=("#include",),
    ),
    "cpp": LanguageSpec(
        name="cpp",
        grammar=("tree_sitter_cpp", "language"),
        continuation_keywords=frozenset({"else", "while", "catch"}),
        scope_types=frozenset(
            {"function_definition", "class_specifier", "struct_specifier", "namespace_definition"}
        ),
        import_types=frozenset({"preproc_include", "using_declaration"}),
        import_prefixes=("#include", "using "),
    ),
    "csharp": _grammar(
        "csharp",
        "tree_sitter_c_sharp",
        quotes=('"""', '"', "'"),
        multiline_quotes=frozenset({'"""'}),
        continuation_keywords=_C_LIKE_CONT,
        scope_types=frozenset({"class_declaration", "method_declaration", "namespace_declaration"}),
        import_prefixes=("using ",),
    ),
    "kotlin": _grammar(
        "kotlin",
        "tree_sitter_kotlin",
        quotes=('"""', '"', "'"),
        multiline_quotes=frozenset({'"""'}),
        continuation_keywords=_C_LIKE_CONT,
        import_prefixes=("package ", "import "),
    ),
    "php": _grammar(
        "php",
        "tree_sitter_php",
        "language_php",
        line_comments=("//", "#"),
        continuation_keywords=frozenset({"else", "elseif", "catch", "finally"}),
        import_prefixes=("use ", "require", "include"),
    ),
    "ruby": _grammar(
        "ruby",
        "tree_sitter_ruby",
        line_comments=("#",),
        block_comment=None,
        continuation_keywords=frozenset({"else", "elsif", "when", "in", "rescue", "ensure"}),
        end_words=frozenset({"end"}),
        import_prefixes=("require",),
    ),
    "lua": _grammar(
        "lua",
        "tree_sitter_lua",
        line_comments=("--",),
        block_comment=None,
        continuation_keywords=frozenset({"else", "elseif", "until"}),
        end_words=frozenset({"end"}),
        import_prefixes=("local ", "require"),
    ),
    "bash": _grammar(
        "bash",
        "tree_sitter_bash",
        line_comments=("#",),
        block_comment=None,
        quotes=('"', "'", "`"),
        multiline_quotes=frozenset({'"', "'"}),
        continuation_keywords=frozenset({"else", "elif", "then", "do"}),
        end_words=frozenset({"fi", "done", "esac"}),
        import_prefixes=("source ", ". "),
    ),
    "css": _grammar("css", "tree_sitter_css", line_comments=(), import_prefixes=("@import",)),
    "html": _grammar("html", "tree_sitter_html", line_comments=(), block_comment=("<!--", "-->")),
    "json": _grammar("json", "tree_sitter_json", quotes=('"',)),
    "yaml": _grammar(
        "yaml",
        "tree_sitter_yaml",
        line_comments=("#",),
        block_comment=None,
        indent_blocks=True,  # `key:` opens a block; the block keywords are any key
    ),
    "toml": _grammar(
        "toml",
        "tree_sitter_toml",
        line_comments=("#",),
        block_comment=None,
        quotes=('"""', "'''", '"', "'"),
        multiline_quotes=frozenset({'"""', "'''"}),
    ),
    "sql": _grammar(
        "sql",
        "tree_sitter_sql",
        line_comments=("--",),
        quotes=("'", '"'),
        dedent_ends=False,  # clauses (FROM, WHERE) sit left of the select list
    ),
    # Without a grammar package that loads offline: lexical rules only.
    "markdown": _text_only(
        "markdown",
        line_comments=(),
        block_comment=("<!--", "-->"),
        quotes=("`",),
        dedent_ends=False,
    ),
    "haskell": _text_only(
        "haskell", line_comments=("--",), block_comment=("{-", "-}"), quotes=('"',)
    ),
    "fsharp": _text_only("fsharp", block_comment=("(*", "*)"), quotes=('"""', '"')),
    "ocaml": _text_only("ocaml", line_comments=(), block_comment=("(*", "*)"), quotes=('"',)),
    "r": _text_only("r", line_comments=("#",), block_comment=None),
    "scala": _text_only(
        "scala",
        quotes=('"""', '"', "'"),
        multiline_quotes=frozenset({'"""'}),
        strict_char_quote=True,
    ),
    "swift": _text_only("swift", quotes=('"""', '"'), multiline_quotes=frozenset({'"""'})),
    "dart": _text_only(
        "dart",
        quotes=('"""', "'''", '"', "'"),
        multiline_quotes=frozenset({'"""', "'''"}),
    ),
    "julia": _text_only(
        "julia",
        line_comments=("#",),
        block_comment=("#=", "=#"),
        quotes=('"""', '"'),
        multiline_quotes=frozenset({'"""'}),
    ),
    "elixir": _text_only(
        "elixir",
        line_comments=("#",),
        block_comment=None,
        quotes=('"""', '"', "'"),
        multiline_quotes=frozenset({'"""'}),
    ),
    "perl": _text_only("perl", line_comments=("#",), block_comment=None),
    "clojure": _text_only(
        "clojure", line_comments=(";",), block_comment=None, quotes=('"',), dedent_ends=False
    ),
    "zig": _text_only("zig", block_comment=None, quotes=('"', "'")),
    "powershell": _text_only(
        "powershell", line_comments=("#",), block_comment=("<#", "#>"), quotes=('"', "'")
    ),
}

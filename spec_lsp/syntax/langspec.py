"""`LanguageSpec`: what the syntax layer knows of one language: comment and quote syntax, how
blocks are delimited and continued, the grammar package (if any) and the tree-sitter node types the
context builder looks for. The catalog of languages is in `spec_lsp.syntax.catalog`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    grammar: tuple[str, str] | None  # (python module, function returning the language pointer)
    line_comments: tuple[str, ...] = ("//",)
    block_comment: tuple[str, str] | None = ("/*", "*/")
    quotes: tuple[str, ...] = ('"', "'")  # longest first
    multiline_quotes: frozenset[str] = frozenset()
    strict_char_quote: bool = False  # Rust: `'` only starts a char literal, not a lifetime
    indent_blocks: bool = False  # Python: blocks are opened by a line ending in `:`
    block_keywords: frozenset[str] = frozenset()  # lines that open a block with a trailing `:`
    continuation_keywords: frozenset[str] = frozenset()  # keep a statement going at its level
    end_words: frozenset[str] = frozenset()  # a line starting with one closes the block (`end`)
    dedent_ends: bool = True  # a line indented less than the cursor's block ends it (not SQL)
    scope_types: frozenset[str] = frozenset()
    import_types: frozenset[str] = frozenset()
    import_prefixes: tuple[str, ...] = ()  # text fallback for imports
    comment_types: frozenset[str] = frozenset({"comment", "line_comment", "block_comment"})
    string_types: frozenset[str] = field(
        default_factory=lambda: frozenset(
            {
                "string",
                "string_literal",
                "raw_string_literal",
                "interpreted_string_literal",
                "template_string",
                "char_literal",
                "character_literal",
                "text_block",
            }
        )
    )

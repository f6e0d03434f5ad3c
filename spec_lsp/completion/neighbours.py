"""Context from other files: a bounded ring of chunks of recently opened or edited documents.

Opening a document notes its first `CHUNK_LINES` lines; an edit notes the block of lines around
it. Notes wait as pending and enter the ring only when the service says the user is idle (a
request after a pause), never mid-typing, so the text placed ahead of the current file in the
prompt stays byte-identical from keystroke to keystroke and the KV prefix survives. The ring
keeps `RING_SIZE` chunks in a stable order (a chunk edited again is updated in place; a new one
goes last and the oldest is dropped), as llama.vscode does (16 chunks of 64 lines).

What may enter the ring (`shareable`): only documents of enabled languages, and never a private
file (`private`: the built-in `PRIVATE_FILES` such as `.env` or `id_rsa`, the user's
`privateFiles` and `exclude` patterns); a private file gets no suggestions either, so its text is
in no prompt at all, local or remote. A closed document's chunks go (`forget`), as do a deleted
file's; a renamed one's follow its new name (`drop`, `rename`).

This module owns the ring, that policy, and the rendering of its chunks for a prompt, with each
model family's file markers (Qwen2.5-Coder's `<|file_sep|>`, a comment line naming the file for
the others). It knows nothing of the model, LSP or the syntax layer.
"""

from __future__ import annotations

import fnmatch
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

from spec_lsp.config import Options

CHUNK_LINES = 64
RING_SIZE = 16
MIN_CHUNK_CHARS = 32  # a chunk shorter than this (blank, a stub) is not worth its tokens
SLASH_COMMENTS = ("c", "cpp", "java", "javascript", "typescript", "go", "rust", "csharp", "kotlin")

# Files that hold secrets by their name or folder: their text never leaves them. Patterns as
# `Options.exclude` (without `/`: the file name; with: the path), compared in lower case.
PRIVATE_FILES = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.gpg",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".htpasswd",
    "credentials*",
    "*secret*",
    "*service-account*.json",  # GCP keys
    "*.tfvars",
    "*.tfstate*",  # terraform.tfstate.backup too
    "*.ppk",
    "*.keytab",
    "*.ovpn",
    "*kubeconfig*",
    ".vault-token",
    ".s3cfg",
    ".boto",
    ".my.cnf",
    ".yarnrc*",
    ".terraformrc",
    "terraform.rc",
    "rclone.conf",
    # `env.*` would take Alembic's env.py: the deployment names only
    "env.local",
    "env.prod*",
    "env.dev*",
    "env.stag*",
    "*/.ssh/*",
    "*/.gnupg/*",
    "*/.aws/*",
    "*/.kube/config",
    "*/.docker/config.json",
    "*/.config/gh/*",
    "*/.config/gcloud/*",
    "*/.m2/settings*.xml",
)

ChunkKey = tuple[str, int]  # (uri, first line)
Admits = Callable[[str, str], bool]  # (uri, language id) -> may its text enter the ring


def file_name(uri: str) -> str:
    return uri.rsplit("/", 1)[-1] or uri


def uri_path(uri: str) -> str:
    """The `/`-separated path of a URI (`file:///w/a%20b.py` -> `/w/a b.py`)."""
    return unquote(urlsplit(uri).path) or uri


def private(options: Options, uri: str) -> bool:
    """A file whose text never leaves it: the built-in list, `privateFiles` or `exclude`."""
    path = uri_path(uri)
    lower, name = path.lower(), path.rsplit("/", 1)[-1].lower()
    patterns = (*PRIVATE_FILES, *(p.lower() for p in options.private_files))
    hit = any(fnmatch.fnmatchcase(lower if "/" in p else name, p) for p in patterns)
    return hit or options.excluded(path)


def shareable(options: Options, uri: str, language_id: str) -> bool:
    """Whether a document's text may be other files' context: its language is enabled and it is
    not private."""
    return options.language_enabled(language_id) and not private(options, uri)


class Neighbours:
    def __init__(
        self, size: int = RING_SIZE, lines: int = CHUNK_LINES, admits: Admits | None = None
    ) -> None:
        self.size = size
        self.lines = lines
        self.admits: Admits = admits or (lambda _uri, _language_id: True)
        self._ring: OrderedDict[ChunkKey, str] = OrderedDict()
        self._pending: OrderedDict[ChunkKey, str] = OrderedDict()
        self._languages: dict[str, str] = {}  # uri -> language id, for `refilter`
        self.settles = 0  # calls of `settle`: the pauses where other files' context may change

    def note(self, uri: str, lines: list[str], row: int, language_id: str = "") -> None:
        """Notes the block of `lines` around `row` of `uri` (it enters the ring at `settle`);
        nothing of a document the ring does not admit (`admits`)."""
        self._languages[uri] = language_id
        if not self.admits(uri, language_id):
            self._remove(lambda u: u == uri)
            return
        start = max(0, row - self.lines // 2)
        text = "\n".join(lines[start : start + self.lines])
        key = (uri, start)
        for old in [k for k in self._pending if k[0] == uri]:  # one pending block per document
            del self._pending[old]
        if len(text.strip()) >= MIN_CHUNK_CHARS:
            self._pending[key] = text
        # More would push each other out of the ring (one more: the current document's note
        # waits while the others settle).
        while len(self._pending) > self.size + 1:
            self._pending.popitem(last=False)

    def settle(self, keep: str = "") -> bool:
        """Moves pending notes into the ring (on idle), but those of document `keep` (the one
        being completed in: its chunks are not in its own prompt, and one of them entering could
        push another document's out of it); True when the ring changed."""
        self.settles += 1
        changed = False
        for (uri, start), text in list(self._pending.items()):
            if uri == keep:
                continue
            del self._pending[(uri, start)]
            for key in [k for k in self._ring if k[0] == uri and abs(k[1] - start) < self.lines]:
                if key != (uri, start):  # an overlapping block of the same document goes
                    del self._ring[key]
            if self._ring.get((uri, start)) != text:
                self._ring[(uri, start)] = text  # in place when it was there: the order holds
                changed = True
            while len(self._ring) > self.size:
                self._ring.popitem(last=False)
        return changed

    def forget(self, uri: str) -> bool:
        """A closed document: its chunks and its note go (what the user closed is not sent on
        as context). True when the ring changed."""
        self._languages.pop(uri, None)
        return self._remove(lambda u: u == uri)

    def drop(self, uri: str) -> bool:
        """A deleted file, or every file under a deleted folder: its chunks and notes go (a
        prompt must not show a file that is gone). True when the ring changed."""
        for gone in [u for u in self._languages if _under(u, uri)]:
            del self._languages[gone]
        return self._remove(lambda u: _under(u, uri))

    def rename(self, old: str, new: str) -> None:
        """A file (or folder) renamed: its chunks and notes go by the new name, in place (unless
        the new name is not admitted: `.env.txt` -> `.env`)."""
        old, new = old.rstrip("/"), new.rstrip("/")
        for table in (self._ring, self._pending):  # rebuilt in the same order
            renamed = [
                ((_moved(uri, old, new), start), text) for (uri, start), text in table.items()
            ]
            table.clear()
            table.update(renamed)
        self._languages = {_moved(u, old, new): lang for u, lang in self._languages.items()}
        self.refilter()

    def refilter(self) -> bool:
        """Drops the chunks and notes of documents no longer admitted (the options changed: a
        language turned off, a pattern added). True when the ring changed."""
        return self._remove(lambda u: not self.admits(u, self._languages.get(u, "")))

    def _remove(self, gone: Callable[[str], bool]) -> bool:
        ring = len(self._ring)
        for table in (self._ring, self._pending):
            for key in [k for k in table if gone(k[0])]:
                del table[key]
        return len(self._ring) != ring

    @property
    def pending(self) -> int:
        """How many notes wait for the next pause (`settle`): at most one per document, and
        `size` + 1 in all."""
        return len(self._pending)

    def chunks(self, exclude: str, text: str = "") -> list[tuple[str, str]]:
        """(file name, text) of the ring's chunks of other documents, oldest first, but those
        whose text the current document (`text`) already has (a copy adds nothing)."""
        return [
            (file_name(uri), chunk)
            for (uri, _), chunk in self._ring.items()
            if uri != exclude and chunk not in text
        ]


def _under(uri: str, target: str) -> bool:
    """`uri` is `target`, or a file inside the folder `target`."""
    return uri == target or uri.startswith(target.rstrip("/") + "/")


def _moved(uri: str, old: str, new: str) -> str:
    """`uri` after `old` (a file or a folder) became `new`."""
    return new + uri[len(old) :] if _under(uri, old) else uri


def markers(
    family: str, language_id: str, chunks: list[tuple[str, str]], uri: str
) -> tuple[str, ...]:
    """What `render` writes to start a file's block, as the model would write it again: a
    suggestion that reaches one has left the current file (empty without other files)."""
    if not chunks:
        return ()
    if family == "qwen":
        return ("<|file_sep|>", "<|repo_name|>")
    mark = "//" if language_id in SLASH_COMMENTS else "#"
    names = dict.fromkeys([*(name for name, _ in chunks), file_name(uri)])
    return tuple(f"\n{mark} {name}" for name in names)


def render(
    family: str, language_id: str, chunks: list[tuple[str, str]], uri: str, limit: int
) -> str:
    """The chunks as text ahead of the current file, within `limit` characters (the newest kept).

    Qwen2.5-Coder was trained on repository files as `<|repo_name|>` then `<|file_sep|>path`
    blocks, the current file last; other families get each chunk under a comment naming it."""
    if not chunks or limit <= 0:
        return ""
    if family == "qwen":
        parts = [f"<|file_sep|>{name}\n{text}\n" for name, text in chunks]
        head, tail = "<|repo_name|>workspace\n", f"<|file_sep|>{file_name(uri)}\n"
    else:
        mark = "//" if language_id in SLASH_COMMENTS else "#"
        parts = [f"{mark} {name}\n{text}\n\n" for name, text in chunks]
        head, tail = "", f"{mark} {file_name(uri)}\n"
    while parts and len(head) + len(tail) + sum(map(len, parts)) > limit:
        parts.pop(0)
    return head + "".join(parts) + tail if parts else ""

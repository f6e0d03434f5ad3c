"""The LSP handlers, one module-level function per method, and the table `build_server` registers.

Each handler is named after the method it serves, takes `(ls, params)` as pygls passes them,
converts the params (convert.py), calls the client's session (the completion service or next
edits) and converts back. Everything else (scheduling, prompts, models) lives behind
`CompletionService`; the initialize order and malformed params are pygls_internals.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from lsprotocol import types
from pygls import uris
from pygls.exceptions import JsonRpcInvalidParams

from spec_lsp.completion import CompletionService, Suggestion
from spec_lsp.completion.feedback import Feedback
from spec_lsp.completion.repo import WATCHED_GLOB
from spec_lsp.config import Options, settings_section
from spec_lsp.engine import kvstarts
from spec_lsp.nextedit import wire as edit_wire
from spec_lsp.nextedit.service import NextEdits
from spec_lsp.server.convert import (
    ACCEPT_COMMAND,
    editor_definitions,
    lsp_change,
    lsp_completion_item,
    lsp_inline_item,
    param,
    suggestion_id,
)
from spec_lsp.server.host import LoaderFactory
from spec_lsp.server.language_server import ARRIVAL, SpecServer
from spec_lsp.server.pygls_internals import shutdown_requested
from spec_lsp.server.session import ClientSession
from spec_lsp.trust import client_options

log = logging.getLogger(__name__)

STATS = "spec-lsp/stats"
STATUS = "spec-lsp/status"
DID_SHOW = "spec-lsp/didShowCompletion"
DID_ACCEPT = "spec-lsp/didAcceptCompletion"
DID_PARTIALLY_ACCEPT = "spec-lsp/didPartiallyAcceptCompletion"
DOCUMENT_TEXT = "spec-lsp/documentText"
DID_MOVE_CURSOR = "spec-lsp/didMoveCursor"
DEFINITIONS = "spec-lsp/definitions"
ALTERNATIVES = 3  # distinct suggestions for an explicit (Invoked) inline request
EXIT_GRACE_S = 3.0  # after `exit`, the process is ended even if a thread still blocks
INVOKED_LOAD_WAIT_S = 10.0  # an explicitly invoked request waits this long for a loading model

EVERY_FILE = types.FileOperationRegistrationOptions(
    filters=[types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*"))]
)


# -- lifecycle ----------------------------------------------------------------------------------
def initialize(ls: SpecServer, params: types.InitializeParams) -> None:
    ls.options, warnings = client_options(ls.options, params.initialization_options)
    worker, name, lane = ls.worker_port()  # a shared server's clients share one worker
    service = CompletionService(worker, ls.options)
    service.planner.seed_window_starts(kvstarts.load())  # a restarted server's windows
    ls.set_session(ClientSession(service, NextEdits(service), warnings, name, lane))
    service.planner.repo.workspace(workspace_roots(params))  # the symbol index, built aside


async def initialized(ls: SpecServer, params: types.InitializedParams) -> None:
    session = ls.session
    for message in session.pending_warnings:
        ls.warn(message)
    session.pending_warnings = []
    watch_source_files(ls)
    await ls.ready_models()


def watch_source_files(ls: SpecServer) -> None:
    """Asks a client that can (dynamic registration) for `workspace/didChangeWatchedFiles` on
    the source files the symbol index reads."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    if watched is None or not watched.dynamic_registration:
        return
    watcher = types.FileSystemWatcher(glob_pattern=WATCHED_GLOB)
    options = types.DidChangeWatchedFilesRegistrationOptions(watchers=[watcher])
    method = types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    registration = types.Registration(
        id="spec-lsp-source-files", method=method, register_options=options
    )
    ls.client_register_capability(types.RegistrationParams(registrations=[registration]))


def shutdown(ls: SpecServer, params: Any) -> None:
    ls.keep_window_starts()
    if not ls.shared:  # a shared server's models outlive a session
        ls.end_models()


def exit_(ls: SpecServer, params: Any) -> None:
    if ls.shared:  # pygls closes the connection; the transport ends that session only
        return
    code = 0 if shutdown_requested(ls.protocol) else 1
    timer = threading.Timer(EXIT_GRACE_S, os._exit, args=(code,))
    timer.daemon = True
    timer.start()


def workspace_roots(params: types.InitializeParams) -> list[str]:
    """The workspace's folders as paths (`workspaceFolders`, else `rootUri`, else `rootPath`)."""
    uris_ = [f.uri for f in params.workspace_folders or []] or [params.root_uri or ""]
    paths = [uris.to_fs_path(u) for u in uris_ if u]
    return [p for p in paths if p] or ([params.root_path] if params.root_path else [])


# -- documents and workspace --------------------------------------------------------------------
def text_document_did_open(ls: SpecServer, params: types.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    ls.session.service.did_open(doc.uri, doc.language_id, doc.version, doc.text)


def text_document_did_change(ls: SpecServer, params: types.DidChangeTextDocumentParams) -> None:
    doc = params.text_document
    changes = [lsp_change(c) for c in params.content_changes]
    if not ls.session.service.did_change(doc.uri, doc.version, changes, ls.encoding):
        log.warning("didChange for a document that is not open: %r", doc.uri)


def text_document_did_close(ls: SpecServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.session.service.did_close(params.text_document.uri)


def text_document_did_save(ls: SpecServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.session.service.planner.repo.saved_or_closed(params.text_document.uri)


def workspace_did_change_watched_files(
    ls: SpecServer, params: types.DidChangeWatchedFilesParams
) -> None:
    for change in params.changes:  # the symbol index follows the files on disk
        deleted = change.type == types.FileChangeType.Deleted
        ls.session.service.planner.repo.file_event(change.uri, deleted)


def workspace_did_change_workspace_folders(
    ls: SpecServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    def paths(folders: Sequence[types.WorkspaceFolder]) -> list[str]:
        return [p for f in folders if (p := uris.to_fs_path(f.uri))]

    event = params.event  # pygls's own handler has updated `ls.workspace` already
    ls.session.service.planner.repo.folders_changed(paths(event.added), paths(event.removed))


def workspace_did_delete_files(ls: SpecServer, params: types.DeleteFilesParams) -> None:
    for file in params.files:  # other files' context: a file that is gone leaves it
        ls.session.service.neighbours.drop(file.uri)


def workspace_did_rename_files(ls: SpecServer, params: types.RenameFilesParams) -> None:
    for file in params.files:
        ls.session.service.neighbours.rename(file.old_uri, file.new_uri)


async def workspace_did_change_configuration(
    ls: SpecServer, params: types.DidChangeConfigurationParams
) -> None:
    section = settings_section(params.settings)
    if section is None:
        return
    options, warnings = client_options(ls.options, section)
    for message in warnings:
        ls.warn(message)
    options = ls.keep_shared_models(options)  # another window's model is not changed under it
    reload = options.model_key() != ls.options.model_key()
    ls.options = options
    ls.session.service.set_options(options)
    if reload:
        await ls.load_models()


def spec_lsp_did_move_cursor(ls: SpecServer, params: Any) -> None:
    doc, position = param(params, "textDocument"), param(params, "position")
    uri, version = param(doc, "uri"), param(doc, "version")
    line, char = param(position, "line"), param(position, "character")
    if not isinstance(uri, str):
        return
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (line, char)):
        return
    if ls.options.excluded(uris.to_fs_path(uri) or uri):
        return
    version = version if isinstance(version, int) and not isinstance(version, bool) else None
    ls.session.service.did_move_cursor(uri, version, line, char, ls.encoding)


def spec_lsp_definitions(ls: SpecServer, params: Any) -> None:
    """What the editor's other language servers know of the names near the cursor: shown as
    the symbol index's definitions are (completion/editor_definitions.py)."""
    told = editor_definitions(params)
    if told is None:
        log.warning("%s without a textDocument.uri and a definitions list: ignored", DEFINITIONS)
        return
    uri, version, sent = told
    kept = ls.session.service.planner.editor_definitions(uri, version, sent)
    log.debug("%s: %d of %d definitions kept for %s", DEFINITIONS, kept, len(sent), uri)


def spec_lsp_document_text(ls: SpecServer, params: Any) -> dict[str, Any] | None:
    uri = param(params, "uri")
    doc = ls.session.service.docs.get(uri) if isinstance(uri, str) else None
    return None if doc is None else {"version": doc.version, "text": doc.text}


# -- completions and their feedback -------------------------------------------------------------
async def text_document_inline_completion(
    ls: SpecServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList:
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    found = await _complete(ls, params.text_document.uri, params.position, invoked)
    return types.InlineCompletionList(items=[lsp_inline_item(s, params.position) for s in found])


async def text_document_completion(
    ls: SpecServer, params: types.CompletionParams
) -> types.CompletionList:
    found = await _complete(ls, params.text_document.uri, params.position)
    items = [lsp_completion_item(s, params.position) for s in found]
    return types.CompletionList(is_incomplete=True, items=items)


async def _complete(
    ls: SpecServer, uri: str, position: types.Position, invoked: bool = False
) -> list[Suggestion]:
    """`invoked`: the user asked explicitly, so a model still loading is waited for (bounded),
    and up to `ALTERNATIVES` distinct suggestions come back (the editor cycles them); automatic
    requests get one, and are answered empty at once while the model loads."""
    service = ls.session.service
    if ls.options.excluded(uris.to_fs_path(uri) or uri):
        return []  # an `exclude` pattern matches the file: no suggestion, no model call
    arrival = ARRIVAL.get()
    if invoked and ls.worker is not None and ls.worker.state == "loading":
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ls.loaded.wait(), INVOKED_LOAD_WAIT_S)
    n = ALTERNATIVES if invoked else 1
    line, char = position.line, position.character
    return await service.complete_all(uri, line, char, ls.encoding, arrival, n)


def _on_suggestion(ls: SpecServer, params: Any, act: Callable[[Feedback, str], None]) -> None:
    """`act` on the suggestion whose `id` `params` holds; nothing without one."""
    if (sid := suggestion_id(params)) is not None:
        act(ls.session.service.feedback, sid)


def did_accept_command(ls: SpecServer, *args: Any) -> None:
    _on_suggestion(ls, args[0] if args else None, Feedback.did_accept)


def spec_lsp_did_show_completion(ls: SpecServer, params: Any) -> None:
    _on_suggestion(ls, params, Feedback.did_show)


def spec_lsp_did_accept_completion(ls: SpecServer, params: Any) -> None:
    _on_suggestion(ls, params, Feedback.did_accept)


def spec_lsp_did_partially_accept_completion(ls: SpecServer, params: Any) -> None:
    length = param(params, "acceptedLength")
    if isinstance(length, int):
        _on_suggestion(ls, params, lambda feedback, sid: feedback.did_partially_accept(sid, length))


# -- next edit ----------------------------------------------------------------------------------
async def text_document_copilot_inline_edit(ls: SpecServer, params: Any) -> dict[str, Any]:
    request = edit_wire.parse_request(params)
    if request is None:
        raise JsonRpcInvalidParams(
            f"{edit_wire.METHOD} needs textDocument.uri, textDocument.version and position"
        )
    return {"edits": await _next_edits(ls, request)}


async def _next_edits(ls: SpecServer, request: edit_wire.EditRequest) -> list[dict[str, Any]]:
    """The next edit at the request's position, as Copilot's clients read it ([] for none)."""
    uri = request.uri
    service, next_edits = ls.session.service, ls.session.next_edits
    if ls.options.excluded(uris.to_fs_path(uri) or uri):
        return []
    doc = service.docs.get(uri)
    pos = None if doc is None else doc.position(request.line, request.character, ls.encoding)
    if doc is None or pos is None:
        return []
    found = await next_edits.suggest(uri, request.version, *pos)
    if found is None or service.docs.get(uri) is not doc or doc.version != found.version:
        return []
    return [edit_wire.to_wire(found, doc, ls.encoding)]


def _on_edit(ls: SpecServer, params: Any, act: Callable[[NextEdits, str], None]) -> None:
    """`act` on the next edit whose id `params` holds; nothing without one."""
    if (sid := edit_wire.edit_id(params)) is not None:
        act(ls.session.next_edits, sid)


def text_document_did_show_inline_edit(ls: SpecServer, params: Any) -> None:
    _on_edit(ls, params, NextEdits.did_show)


def text_document_did_focus(ls: SpecServer, params: Any) -> None:
    """Copilot's clients say which document has the focus; nothing to do with it (accepted
    so that it is not logged as an unknown method at every buffer switch)."""


def spec_lsp_did_reject_inline_edit(ls: SpecServer, params: Any) -> None:
    _on_edit(ls, params, NextEdits.did_reject)


def did_accept_inline_edit(ls: SpecServer, *args: Any) -> None:
    _on_edit(ls, args[0] if args else None, NextEdits.did_accept)


# -- what the server says about itself ----------------------------------------------------------
def spec_lsp_stats(ls: SpecServer, params: Any) -> dict[str, Any]:
    session, status = ls.session, ls.status()
    model = {k: status[k] for k in ("preset", "device", "state", "forward", "kernels")}
    out = session.service.stats_wire(model)
    out["nextEdit"] = session.next_edits.stats.to_wire()
    return out


def spec_lsp_status(ls: SpecServer, params: Any) -> dict[str, Any]:
    return ls.status()


# -- the registration table ---------------------------------------------------------------------
# (method, handler, registration options), in the order they are registered.
FEATURES: tuple[tuple[str, Callable[..., Any], Any], ...] = (
    (types.INITIALIZE, initialize, None),
    (types.INITIALIZED, initialized, None),
    (types.TEXT_DOCUMENT_DID_OPEN, text_document_did_open, None),
    (types.TEXT_DOCUMENT_DID_CHANGE, text_document_did_change, None),
    (types.TEXT_DOCUMENT_DID_CLOSE, text_document_did_close, None),
    (types.TEXT_DOCUMENT_DID_SAVE, text_document_did_save, None),
    (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, workspace_did_change_watched_files, None),
    (
        types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
        workspace_did_change_workspace_folders,
        None,
    ),
    (types.WORKSPACE_DID_DELETE_FILES, workspace_did_delete_files, EVERY_FILE),
    (types.WORKSPACE_DID_RENAME_FILES, workspace_did_rename_files, EVERY_FILE),
    (
        types.TEXT_DOCUMENT_INLINE_COMPLETION,
        text_document_inline_completion,
        types.InlineCompletionOptions(),
    ),
    (types.TEXT_DOCUMENT_COMPLETION, text_document_completion, types.CompletionOptions()),
    (types.WORKSPACE_DID_CHANGE_CONFIGURATION, workspace_did_change_configuration, None),
    (DID_SHOW, spec_lsp_did_show_completion, None),
    (DID_ACCEPT, spec_lsp_did_accept_completion, None),
    (DID_PARTIALLY_ACCEPT, spec_lsp_did_partially_accept_completion, None),
    (DID_MOVE_CURSOR, spec_lsp_did_move_cursor, None),
    (DEFINITIONS, spec_lsp_definitions, None),
    (edit_wire.METHOD, text_document_copilot_inline_edit, None),
    (edit_wire.DID_SHOW, text_document_did_show_inline_edit, None),
    (edit_wire.DID_FOCUS, text_document_did_focus, None),
    (edit_wire.DID_REJECT, spec_lsp_did_reject_inline_edit, None),
    (STATS, spec_lsp_stats, None),
    (STATUS, spec_lsp_status, None),
    (DOCUMENT_TEXT, spec_lsp_document_text, None),
    (types.SHUTDOWN, shutdown, None),
    (types.EXIT, exit_, None),
)
# workspace/executeCommand's commands: (name, handler).
COMMANDS: tuple[tuple[str, Callable[..., Any]], ...] = (
    (ACCEPT_COMMAND, did_accept_command),
    (edit_wire.ACCEPT_COMMAND, did_accept_inline_edit),
)


def build_server(
    preset: str = Options.preset,
    device: str = "auto",
    loader: LoaderFactory | None = None,
    trust_remote_code: bool = False,
) -> SpecServer:
    """The server with every handler of the table registered. `trust_remote_code` comes from the
    command line only: no client can set it (config.merge ignores it)."""
    server = SpecServer(preset, device, loader)
    server.options = dataclasses.replace(server.options, trust_remote_code=trust_remote_code)
    server.register = register
    register(server)
    return server


def register(server: SpecServer) -> None:
    """Registers every handler of the table on `server` (a shared server's clients' too)."""
    for method, handler, options in FEATURES:
        server.feature(method, options)(handler)
    for name, command in COMMANDS:
        server.command(name)(command)

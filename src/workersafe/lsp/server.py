"""The LSP wiring (pygls): documents in, diagnostics and code actions out.

- diagnostics on open, save and change (debounced), for every open document, from one linked
  analysis of the workspace (state.Workspace);
- per diagnostic: a preferred quick fix carrying the fixer's rewrite as a WorkspaceEdit (every
  file it touches), and "ignore with `# noqa: WSxxx`"; per file: "fix all" (also as the
  `source.fixAll.workersafe` kind editors run on save);
- fixes are computed when the client resolves the action when it can (codeAction/resolve),
  so listing actions stays cheap."""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from ..findings import Finding, finding_key
from ..notebook import is_notebook
from ..report import DOCS_URL
from ..ruletable import UNREADABLE, level_of
from .edits import Edit, line_edits, noqa_edit
from .state import Workspace

SOURCE = "workersafe"
DEBOUNCE = float(os.environ.get("WORKERSAFE_LSP_DEBOUNCE", "0.3"))  # seconds after a keystroke
FIX_ALL_KIND = "source.fixAll.workersafe"
log = logging.getLogger("workersafe.lsp")


class WorkerSafeServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("workersafe", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.state: Optional[Workspace] = None
        self.published: set[str] = set()
        self.uris: dict[str, str] = {}  # path → the URI the editor named it by (untitled:...)
        self.pending: Optional[asyncio.TimerHandle] = None
        self.shut_down = False  # `shutdown` was asked for
        self.exiting = False  # `exit` arrived

    # --- helpers -------------------------------------------------------------------------------

    def workspace_state(self) -> Workspace:
        if self.state is None:
            self.state = Workspace(None)
        return self.state

    def uri_of(self, path: str) -> str:
        return self.uris.get(path) or from_fs_path(path) or path

    def publish(self) -> None:
        """Analyse (if anything changed) and publish diagnostics for every open document."""
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None
        state = self.workspace_state()
        try:
            analysis = state.analysis()
        except Exception as exc:  # noqa: BLE001 - never take the editor down
            log.exception("analysis failed")
            self.window_log_message(types.LogMessageParams(
                types.MessageType.Error, f"workersafe: analysis failed: {exc}"))
            return
        open_paths = set(state.buffers)
        for path in sorted(open_paths | self.published):
            findings = analysis.by_path.get(path, []) if path in open_paths else []
            text = state.text(path) or ""
            diagnostics = [self.diagnostic(f, text) for f in findings]
            uri = self.uri_of(path)
            document = self.workspace.text_documents.get(uri)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri, diagnostics, version=document.version if document else None))
        self.published = {p for p in open_paths if analysis.by_path.get(p)}

    def publish_alone(self, path: str) -> None:
        """The first answer for a document opened in a large workspace: its own findings,
        published now; the linked analysis runs next (`pending`) and publishes again. The
        diagnostics carry the document's version, so the later ones replace them."""
        state = self.workspace_state()
        try:
            findings = state.alone(path)
        except Exception:  # noqa: BLE001 - the linked analysis answers instead
            log.exception("analysis of the file alone failed")
            return
        text = state.text(path) or ""
        uri = self.uri_of(path)
        document = self.workspace.text_documents.get(uri)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri, [self.diagnostic(f, text) for f in findings],
            version=document.version if document else None))
        if findings:
            self.published.add(path)

    def schedule(self) -> None:
        if self.pending is not None:
            self.pending.cancel()
        self.pending = asyncio.get_running_loop().call_later(DEBOUNCE, self.publish)

    def to_range(self, text_lines: list[str], start: tuple[int, int], end: tuple[int, int]
                 ) -> types.Range:
        codec = self.workspace.position_codec
        return codec.range_to_client_units(text_lines, types.Range(
            types.Position(*start), types.Position(*end)))

    def diagnostic(self, finding: Finding, text: str) -> types.Diagnostic:
        lines = text.splitlines(keepends=True) or [""]
        span = finding.span
        end = (span.end_line - 1, span.end_col) if (span.end_line, span.end_col) > (
            span.line, span.col) else (span.line - 1, span.col + 1)
        related = []
        for path, line, col in _loader_sites(finding):
            loader_text = self.workspace_state().text(path) or ""
            loader_lines = loader_text.splitlines(keepends=True) or [""]
            related.append(types.DiagnosticRelatedInformation(
                types.Location(self.uri_of(path),
                               self.to_range(loader_lines, (line - 1, col), (line - 1, col))),
                "the DataLoader whose worker processes share it"))
        return types.Diagnostic(
            range=self.to_range(lines, (span.line - 1, span.col), end),
            message=finding.message,
            severity=(types.DiagnosticSeverity.Warning if level_of(finding.code) == "warning"
                      else types.DiagnosticSeverity.Error),
            code=finding.code,
            code_description=types.CodeDescription(DOCS_URL.format(code=finding.code)),
            source=SOURCE,
            related_information=related or None,
            data={"key": _key_data(finding)},
        )

    def workspace_edit(self, new_texts: dict[str, str]) -> types.WorkspaceEdit:
        state = self.workspace_state()
        changes: dict[str, list[types.TextEdit]] = {}
        for path, new in sorted(new_texts.items()):
            old = state.text(path) or ""
            changes[self.uri_of(path)] = [
                self.text_edit(old, e) for e in line_edits(old, new)]
        return types.WorkspaceEdit(changes=changes)

    def text_edit(self, old: str, edit: Edit) -> types.TextEdit:
        lines = old.splitlines(keepends=True) or [""]
        return types.TextEdit(self.to_range(lines, (edit.start_line, edit.start_col),
                                            (edit.end_line, edit.end_col)), edit.text)

    def can_resolve_edits(self) -> bool:
        caps = self.client_capabilities.text_document
        action = caps.code_action if caps else None
        support = action.resolve_support if action else None
        return bool(support and "edit" in support.properties)

    def can_show_disabled(self) -> bool:
        caps = self.client_capabilities.text_document
        action = caps.code_action if caps else None
        return bool(action and action.disabled_support)


server = WorkerSafeServer()


def _key_data(finding: Finding) -> list[Any]:
    path, span, code = finding_key(finding)
    return [path, span.line, span.col, span.end_line, span.end_col, code]


def _finding_for(findings: list[Finding], data: Any) -> Optional[Finding]:
    key = data.get("key") if isinstance(data, dict) else None
    for finding in findings:
        if key == _key_data(finding):
            return finding
    return None


def _loader_sites(finding: Finding) -> list[tuple[str, int, int]]:
    """Where the DataLoaders that make this finding a hazard are (path, 1-based line, col)."""
    plan = finding.plan
    return [(site[0], site[1], site[2]) for site in getattr(plan, "loaders", ()) or ()]


def _path(uri: str) -> str:
    """The path the analysis knows a document by: a file's, or for a buffer never saved
    (`untitled:Untitled-1`) its URI, as a Python file name."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    if path:
        return os.path.normpath(os.path.abspath(path))
    return uri if uri.endswith((".py", ".pyi", ".ipynb")) else uri + ".py"


# --- lifecycle ------------------------------------------------------------------------------------

@server.feature(types.INITIALIZE)
def initialize(ls: WorkerSafeServer, params: types.InitializeParams) -> None:
    root = None
    if params.workspace_folders:
        root = to_fs_path(params.workspace_folders[0].uri)
    elif params.root_uri:
        root = to_fs_path(params.root_uri)
    elif params.root_path:
        root = params.root_path
    options = params.initialization_options if isinstance(
        params.initialization_options, dict) else {}
    ls.state = Workspace(root, cache=bool(options.get("cache", True)))


@server.feature(types.INITIALIZED)
async def initialized(ls: WorkerSafeServer, params: types.InitializedParams) -> None:
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps else None
    if watched and watched.dynamic_registration:
        globs = ["**/*.py", "**/*.pyi", "**/*.ipynb", "**/pyproject.toml"]
        options = types.DidChangeWatchedFilesRegistrationOptions(
            [types.FileSystemWatcher(glob_pattern=g) for g in globs])
        try:
            await ls.client_register_capability_async(types.RegistrationParams([
                types.Registration("workersafe-watch", types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                   options)]))
        except Exception:  # noqa: BLE001 - without watching, saves and opens still refresh
            log.info("file watching not registered")


@server.feature(types.SHUTDOWN)
def shutdown(ls: WorkerSafeServer, params: None) -> None:
    ls.shut_down = True
    if ls.pending is not None:
        ls.pending.cancel()
        ls.pending = None


@server.feature(types.EXIT)
def exit_(ls: WorkerSafeServer, params: None) -> None:
    ls.exiting = True


# --- documents --------------------------------------------------------------------------------

@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: WorkerSafeServer, params: types.DidOpenTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    if is_notebook(path):  # a notebook's JSON opened as text: its code is read from disk
        return
    ls.uris[path] = params.text_document.uri
    state = ls.workspace_state()
    state.open(path, params.text_document.text)
    if not state.answers_quickly():
        ls.publish()
        return
    ls.publish_alone(path)
    if ls.pending is not None:
        ls.pending.cancel()
    # the linked analysis, once this notification is out and what already arrived is read
    ls.pending = asyncio.get_running_loop().call_later(0, ls.publish)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: WorkerSafeServer, params: types.DidChangeTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    if is_notebook(path):
        return
    document = ls.workspace.get_text_document(params.text_document.uri)
    ls.workspace_state().update(path, document.source)
    ls.schedule()


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: WorkerSafeServer, params: types.DidSaveTextDocumentParams) -> None:
    state = ls.workspace_state()
    path = _path(params.text_document.uri)
    if path.endswith("pyproject.toml"):
        state.reload_config()
    state.changed()
    ls.publish()


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: WorkerSafeServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.workspace_state().close(_path(params.text_document.uri))
    ls.publish()
    ls.uris.pop(_path(params.text_document.uri), None)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched(ls: WorkerSafeServer, params: types.DidChangeWatchedFilesParams) -> None:
    state = ls.workspace_state()
    paths = [_path(c.uri) for c in params.changes]
    if any(p.endswith("pyproject.toml") for p in paths):
        state.reload_config()
    created_or_deleted = any(c.type != types.FileChangeType.Changed for c in params.changes)
    state.changed(files=created_or_deleted)
    ls.schedule()


# --- code actions -----------------------------------------------------------------------------

@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll,
                       FIX_ALL_KIND],
    resolve_provider=True))
def code_action(ls: WorkerSafeServer, params: types.CodeActionParams
                ) -> Optional[list[types.CodeAction]]:
    state = ls.workspace_state()
    path = _path(params.text_document.uri)
    if ls.pending is not None:  # answer about the text the editor shows
        ls.publish()
    findings = state.analysis().by_path.get(path, [])
    wanted = params.context.only
    actions: list[types.CodeAction] = []
    lazy = ls.can_resolve_edits()
    quick = not wanted or any(k.startswith(types.CodeActionKind.QuickFix) for k in wanted)
    fix_all = not wanted or any(types.CodeActionKind.SourceFixAll.startswith(k)
                                or k.startswith(types.CodeActionKind.SourceFixAll)
                                for k in wanted)
    fixable = [f for f in findings if f.plan is not None]
    if quick:
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != SOURCE:
                continue
            finding = _finding_for(findings, diagnostic.data)
            if finding is None:
                continue
            if finding.plan is not None:
                action = _fix_action(ls, path, finding, diagnostic, lazy)
                if action is not None:
                    actions.append(action)
            if finding.code != UNREADABLE:
                actions.append(_noqa_action(ls, path, finding, diagnostic))
    if fixable and (quick or fix_all):
        kinds = ([types.CodeActionKind.QuickFix] if quick else []) + (
            [FIX_ALL_KIND] if fix_all else [])
        for kind in kinds:
            action = _fix_all_action(ls, path, kind, lazy)
            if action is not None:
                actions.append(action)
    return actions or None


def _fix_action(ls: WorkerSafeServer, path: str, finding: Finding,
                diagnostic: types.Diagnostic, lazy: bool) -> Optional[types.CodeAction]:
    action = types.CodeAction(
        title=f"workersafe: create it per worker ({finding.code})",
        kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic], is_preferred=True,
        data={"fix": "one", "path": path, "key": _key_data(finding)})
    return action if lazy else _up_front(ls, action)


def _fix_all_action(ls: WorkerSafeServer, path: str, kind: str, lazy: bool
                    ) -> Optional[types.CodeAction]:
    action = types.CodeAction(title="workersafe: fix all in this file", kind=kind,
                              data={"fix": "file", "path": path})
    return action if lazy else _up_front(ls, action)


def _noqa_action(ls: WorkerSafeServer, path: str, finding: Finding,
                 diagnostic: types.Diagnostic) -> types.CodeAction:
    text = ls.workspace_state().text(path) or ""
    edit = noqa_edit(text, finding.line, finding.code)
    uri = ls.uri_of(path)
    return types.CodeAction(
        title=f"workersafe: ignore with # noqa: {finding.code}",
        kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
        edit=types.WorkspaceEdit(changes={uri: [ls.text_edit(text, edit)]}))


def _resolved(ls: WorkerSafeServer, action: types.CodeAction) -> types.CodeAction:
    """The action with its edit, or disabled with the fixer's reason when it cannot fix it."""
    data = action.data if isinstance(action.data, dict) else {}
    state = ls.workspace_state()
    path = data.get("path", "")
    findings = state.analysis().by_path.get(path, [])
    key = None
    if data.get("fix") == "one":
        finding = _finding_for(findings, data)
        if finding is None:
            action.disabled = types.CodeActionDisabled(
                "the code changed since this fix was offered: ask for it again")
            return action
        key = finding_key(finding)
    result = state.fix(path, key)
    if result.new_texts:
        action.edit = ls.workspace_edit(result.new_texts)
        return action
    wanted = [key] if key else [finding_key(f) for f in findings if f.plan is not None]
    notes = [result.notes[k] for k in wanted if result.notes.get(k)]
    action.disabled = types.CodeActionDisabled(
        notes[0] if notes else "workersafe cannot fix this")
    return action


def _up_front(ls: WorkerSafeServer, action: types.CodeAction) -> Optional[types.CodeAction]:
    """For a client without codeAction/resolve: the edit now; a refused fix is listed
    disabled (with the reason) when the client can show that, else left out."""
    resolved = _resolved(ls, action)
    if resolved.disabled is not None and not ls.can_show_disabled():
        return None
    return resolved


@server.feature(types.CODE_ACTION_RESOLVE)
def code_action_resolve(ls: WorkerSafeServer, action: types.CodeAction) -> types.CodeAction:
    if ls.pending is not None:
        ls.publish()
    return _resolved(ls, action)


def serve() -> int:
    logging.basicConfig(level=logging.WARNING, format="workersafe-lsp: %(message)s")
    server.start_io()
    # The protocol: 0 after shutdown then exit, 1 for exit without shutdown. Standard input
    # closed without either (the editor went away): 0, nothing was lost.
    return 1 if server.exiting and not server.shut_down else 0

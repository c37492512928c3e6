"""A real LSP session for the tests: `python -m workersafe server` in a subprocess, driven over
stdio by pygls's LanguageClient, with a bounded wait on everything."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import to_fs_path

ROOT = Path(__file__).resolve().parents[1]
WAIT = 30.0  # seconds: the longest any single answer may take on a loaded CI machine


class Session:
    def __init__(self, root: Path, resolve: bool = True,
                 env: Optional[dict[str, str]] = None) -> None:
        self.root = root
        self.resolves = resolve
        self.env = env or {}  # more environment for the server
        self.client = LanguageClient("workersafe-tests", "1")
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.versions: dict[str, int] = {}
        self.published: dict[str, Optional[int]] = {}  # uri → version of the last diagnostics
        self.texts: dict[str, str] = {}
        self.changed = asyncio.Event()
        self.publishes = 0  # diagnostics notifications received
        self.history: list[tuple[str, list[types.Diagnostic]]] = []  # every notification
        self.registrations: list[types.Registration] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)
            self.history.append((params.uri, list(params.diagnostics)))
            self.published[params.uri] = params.version
            self.publishes += 1
            self.changed.set()

        @self.client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: types.RegistrationParams) -> None:
            self.registrations += params.registrations

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            pass

    async def start(self) -> types.InitializeResult:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), WORKERSAFE_LSP_DEBOUNCE="0.05",
                   **self.env)
        await self.client.start_io(sys.executable, "-m", "workersafe", "server",
                                   cwd=str(self.root), env=env)
        action_caps = types.CodeActionClientCapabilities(
            resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])
            if self.resolves else None,
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                types.ClientCodeActionKindOptions(["quickfix", "source.fixAll"])),
            is_preferred_support=True, disabled_support=True, data_support=True)
        caps = types.ClientCapabilities(
            text_document=types.TextDocumentClientCapabilities(
                code_action=action_caps,
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                    related_information=True, code_description_support=True,
                    data_support=True)),
            workspace=types.WorkspaceClientCapabilities(
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                    dynamic_registration=True)))
        result = await self.wait(self.client.initialize_async(types.InitializeParams(
            capabilities=caps, root_uri=self.root.as_uri(), process_id=os.getpid(),
            workspace_folders=[types.WorkspaceFolder(self.root.as_uri(), "project")],
            initialization_options={"cache": False})))
        self.client.initialized(types.InitializedParams())
        return result

    async def stop(self) -> Optional[int]:
        await self.wait(self.client.shutdown_async(None))
        self.client.exit(None)
        server = self.client._server
        if server is not None:
            await self.wait(server.wait())
        await self.wait(self.client.stop())
        return server.returncode if server is not None else None

    async def wait(self, awaitable: Any, timeout: float = WAIT) -> Any:
        return await asyncio.wait_for(awaitable, timeout)

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    # --- documents ---------------------------------------------------------------------------

    def open(self, name: str, text: Optional[str] = None) -> str:
        """Open a file of the workspace (`name`), or any URI (`untitled:...`, a file
        elsewhere) with `text`."""
        uri = name if ":" in name else self.uri(name)
        text = (self.root / name).read_text() if text is None else text
        self.texts[uri], self.versions[uri] = text, 1
        self.changed.clear()
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri, "python", 1, text)))
        return uri

    def change(self, uri: str, text: str) -> None:
        self.versions[uri] += 1
        self.texts[uri] = text
        self.changed.clear()
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(self.versions[uri], uri),
            [types.TextDocumentContentChangeWholeDocument(text)]))

    def save(self, uri: str) -> None:
        path = Path(to_fs_path(uri) or "")
        path.write_text(self.texts[uri])
        self.changed.clear()
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(uri)))

    def watched(self, *changes: tuple[str, types.FileChangeType]) -> None:
        """Tell the server files changed on disk, as an editor's file watcher does."""
        self.changed.clear()
        self.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
            [types.FileEvent(self.uri(name), kind) for name, kind in changes]))

    async def next_publish(self, after: int) -> None:
        """Wait (bounded) until more than `after` diagnostics notifications arrived."""
        async def until() -> None:
            while self.publishes <= after:
                self.changed.clear()
                await self.changed.wait()
        await self.wait(until())

    async def diagnostics_where(self, uri: str,
                                check: Callable[[list[types.Diagnostic]], bool]
                                ) -> list[types.Diagnostic]:
        """Wait (bounded) until the diagnostics published for the latest version of `uri` (when
        open) satisfy `check`."""
        async def until() -> list[types.Diagnostic]:
            while True:
                current = uri not in self.versions or self.published.get(uri) == \
                    self.versions[uri]
                if current and uri in self.diagnostics and check(self.diagnostics[uri]):
                    return self.diagnostics[uri]
                self.changed.clear()
                await self.changed.wait()
        return await self.wait(until())

    # --- code actions ------------------------------------------------------------------------

    async def code_actions(self, uri: str, diagnostics: list[types.Diagnostic],
                           only: Optional[list[str]] = None) -> list[types.CodeAction]:
        rng = diagnostics[0].range if diagnostics else types.Range(
            types.Position(0, 0), types.Position(0, 0))
        answer = await self.wait(self.client.text_document_code_action_async(
            types.CodeActionParams(types.TextDocumentIdentifier(uri), rng,
                                   types.CodeActionContext(diagnostics, only=only))))
        return [a for a in answer or [] if isinstance(a, types.CodeAction)]

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        if action.edit is not None:
            return action
        return await self.wait(self.client.code_action_resolve_async(action))

    def apply(self, edit: types.WorkspaceEdit) -> list[str]:
        """Apply a WorkspaceEdit as an editor does: to the open buffer (then didChange), or to
        the file on disk when it is not open. Returns the URIs changed."""
        changed = []
        for uri, edits in (edit.changes or {}).items():
            if uri in self.texts:
                self.change(uri, apply_edits(self.texts[uri], edits))
            else:
                path = Path(to_fs_path(uri) or "")
                path.write_text(apply_edits(path.read_text(), edits))
            changed.append(uri)
        return changed


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply non-overlapping TextEdits (ASCII test files: UTF-16 units are characters)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos: types.Position) -> int:
        if pos.line >= len(lines):
            return len(text)
        return starts[pos.line] + pos.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        text = text[:offset(e.range.start)] + e.new_text + text[offset(e.range.end):]
    return text


def run(coroutine: Any, timeout: float = 180.0) -> Any:
    """Run one test's session with an overall bound."""
    return asyncio.run(asyncio.wait_for(coroutine, timeout))

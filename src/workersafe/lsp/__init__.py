"""`workersafe server`: a language server (LSP over stdio, pygls) over the one engine."""

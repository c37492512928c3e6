"""`workersafe fix`: rewrite code so each DataLoader worker process creates its own handles.

plan (what to move, or why not) → rewrite (libcst edits) → verify (parse, compile, re-lint,
idempotent, untouched bytes) → write (atomic)."""

"""Exit codes and usage errors, shared by the front ends (`workersafe check | fix | rule`,
the fixer): 0 clean, 1 findings (or `fix --diff` would change something), 2 usage or internal
error, 130 interrupted."""

from __future__ import annotations

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """A command line the tool cannot act on; the message is shown to the user."""

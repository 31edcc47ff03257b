"""The adapter's exceptions. Expected verdicts are values (Verdict), never
exceptions; these are for misuse and for a serve process that cannot help."""

from typing import Optional, Tuple

from ._verdict import Violation


class LoopxHooksError(Exception):
    """Misuse the library refused, with its stable ERR_LOOPX_* code (the same
    code the Node.js library puts on its LoopxHooksError)."""

    def __init__(self, code: str, message: str, violations: Optional[Tuple[Violation, ...]] = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.violations = violations


class JournalError(LoopxHooksError):
    """The journal could not be read or written (an ERR_LOOPX_JOURNAL_* code:
    busy, closed, unavailable, ...); nothing of the dispatch was lost, and
    what it checkpointed stays owed for recover()."""


class AdapterError(Exception):
    """The serve process could not be started or stopped answering."""


class NodeNotFoundError(AdapterError):
    """No Node.js executable was found (install Node.js >= 20, or pass node=
    or set LOOPX_HOOKS_NODE)."""


class PackageNotFoundError(AdapterError):
    """The loopx-hooks package (with its built dist/ and addon) was not found."""


class AdapterTimeoutError(AdapterError, TimeoutError):
    """A call got no answer within the adapter's timeout; the serve process
    was stopped, and the next call starts a new one."""

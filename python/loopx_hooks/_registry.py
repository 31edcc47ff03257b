"""The deterministic registry of RFC section 11, slice 1, on the Python side:
hook registrations kept in byte order of hook_id (registration order never
matters), a second registration of one hook_id refused, and each
registration judged by the library through the adapter, never here. Its
producers are dispatched to through the engine (`dispatch`, `recover`)."""

from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from ._adapter import SHIPPED, Adapter, Document, _context_text, _text
from ._dispatch import Dispatching, JournalTarget
from ._errors import LoopxHooksError
from ._verdict import Verdict, Violation


class RegisteredHook:
    __slots__ = ("registration", "digest", "provider", "text")

    def __init__(
        self,
        registration: Dict[str, Any],
        digest: Optional[str],
        provider: Optional[Callable[..., Any]],
        text: str = "",
    ):
        self.registration = registration
        # None in the shipped dialect, which has no registration digest.
        self.digest = digest
        self.provider = provider
        # The JSON text the library accepted, handed to the engine as is.
        self.text = text

    @property
    def hook_id(self) -> str:
        return self.registration["hook_id"]


def _order(hook_id: str) -> bytes:
    return hook_id.encode("utf-8")


def _rejected(violations: Tuple[Violation, ...]) -> LoopxHooksError:
    # The code and message the Node.js runtime's register throws with.
    return LoopxHooksError("ERR_LOOPX_REGISTRATION_REJECTED", "registration_rejected", violations)


class HookRegistry:
    """Hook registrations validated against `kinds` (the intent kind
    definitions of the composition root) through `adapter`; with
    `dialect=SHIPPED`, LoopX's shipped registrations (no kinds)."""

    def __init__(self, adapter: Adapter, kinds: Iterable[Document] = (), *, dialect: Optional[str] = None):
        if dialect not in (None, "contract-v0", SHIPPED):
            raise LoopxHooksError("ERR_LOOPX_UNKNOWN_DIALECT", "unknown dialect")
        self._adapter = adapter
        self._kinds = list(kinds)
        self.dialect = SHIPPED if dialect == SHIPPED else None
        self.kind_texts = [_context_text(k, "an intent kind definition") for k in self._kinds]
        self._hooks: List[RegisteredHook] = []
        self._dispatching = Dispatching(
            adapter,
            dialect=self.dialect,
            kind_texts=self.kind_texts,
            registrations=lambda: [(h.hook_id, h.text) for h in self._hooks],
            provider=self._provider,
        )

    def register(self, registration: Document, provider: Optional[Callable[..., Any]] = None) -> Verdict:
        """Installs `registration` with its `provider` and returns the
        library's verdict (ok). Raises LoopxHooksError with code
        ERR_LOOPX_REGISTRATION_REJECTED and the `violations`, installing
        nothing, when the library rejects the registration or its hook_id is
        taken (duplicate_item at /hook_id), as the Node.js runtime's
        `register` throws."""
        if self.dialect == SHIPPED:
            verdict = self._adapter.validate_shipped_registration(registration)
        else:
            verdict = self._adapter.validate_registration(registration, self._kinds)
        if not verdict.ok:
            raise _rejected(verdict.violations)
        accepted: Dict[str, Any] = verdict.value
        hook_id = accepted["hook_id"]
        if any(h.hook_id == hook_id for h in self._hooks):
            raise _rejected((Violation("/hook_id", "duplicate_item"),))
        digest = None if self.dialect == SHIPPED else self._adapter.registration_digest(registration)
        text, _ = _text(registration)
        at = 0
        while at < len(self._hooks) and _order(self._hooks[at].hook_id) < _order(hook_id):
            at += 1
        self._hooks.insert(at, RegisteredHook(accepted, digest, provider, text or ""))
        return verdict

    def dispatch(
        self, request: Document, *, journal: JournalTarget, profile: Optional[Dict[str, Any]] = None
    ) -> Dict[str, Any]:
        """Dispatches a committed writeback (a DispatchRequest; in the shipped
        dialect a source) through the engine over `journal`, calling the
        registered producers in hook_id order, and returns what the Node.js
        runtime's `dispatch` resolves to (the same JSON): the DispatchOutcome,
        or in the shipped dialect the shipped dispatch result.

        A producer is called with its input (a dict) and returns its result
        (a dict), on a daemon thread of its own: the dispatch waits for it
        at most the limit the engine gives (the hook's timeout_ms, or what
        is left of the wall budget), then reports it timed out and goes on;
        its late result is dropped. A hook with ABANDONED_PER_HOOK such calls
        still running is not called: its calls time out at once. A raised
        exception is isolated (producer_failed) and never crosses as text.
        `profile` is the engine's Profile (camelCase keys, phase disabled by
        default). Journal failures raise JournalError."""
        return self._dispatching.dispatch(request, journal, profile)

    def recover(self, *, journal: JournalTarget, profile: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Re-dispatches every identity left owed in `journal` (checkpointed
        and never finished, e.g. by a host killed mid-dispatch, or failed with
        attempts left), oldest first; returns the Node.js RecoverReport:
        {"outcomes": [HookOutcome...], "skipped": N, "ledgersSkipped": M}."""
        return self._dispatching.recover(journal, profile)

    @property
    def hook_ids(self) -> Tuple[str, ...]:
        """The installed hook_ids, in dispatch (byte) order."""
        return tuple(h.hook_id for h in self._hooks)

    def get(self, hook_id: str) -> Optional[RegisteredHook]:
        return next((h for h in self._hooks if h.hook_id == hook_id), None)

    def _provider(self, hook_id: str) -> Optional[Callable[..., Any]]:
        hook = self.get(hook_id)
        return hook.provider if hook is not None else None

    def subscribed(self, event_kind: str) -> Tuple[RegisteredHook, ...]:
        """The hooks subscribed to `event_kind`, in hook_id order."""
        return tuple(h for h in self._hooks if event_kind in h.registration["event_kinds"])

    def __iter__(self) -> Iterator[RegisteredHook]:
        return iter(tuple(self._hooks))

    def __len__(self) -> int:
        return len(self._hooks)

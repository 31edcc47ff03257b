"""The deterministic registry of RFC section 11, slice 1, on the Python side:
hook registrations kept in byte order of hook_id (registration order never
matters), a second registration of one hook_id refused, and each
registration judged by the library through the adapter, never here."""

from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from ._adapter import Adapter, Document
from ._verdict import Verdict, Violation


class RegisteredHook:
    __slots__ = ("registration", "digest", "provider")

    def __init__(self, registration: Dict[str, Any], digest: str, provider: Optional[Callable[..., Any]]):
        self.registration = registration
        self.digest = digest
        self.provider = provider

    @property
    def hook_id(self) -> str:
        return self.registration["hook_id"]


def _order(hook_id: str) -> bytes:
    return hook_id.encode("utf-8")


class HookRegistry:
    """Hook registrations validated against `kinds` (the intent kind
    definitions of the composition root) through `adapter`."""

    def __init__(self, adapter: Adapter, kinds: Iterable[Document]):
        self._adapter = adapter
        self._kinds = list(kinds)
        self._hooks: List[RegisteredHook] = []

    def register(self, registration: Document, provider: Optional[Callable[..., Any]] = None) -> Verdict:
        """Installs `registration` when the library accepts it and its hook_id
        is new; otherwise installs nothing and returns the violations (a taken
        hook_id is duplicate_item at /hook_id, as in the Node.js runtime)."""
        verdict = self._adapter.validate_registration(registration, self._kinds)
        if not verdict.ok:
            return verdict
        accepted: Dict[str, Any] = verdict.value
        hook_id = accepted["hook_id"]
        if any(h.hook_id == hook_id for h in self._hooks):
            return Verdict(False, (Violation("/hook_id", "duplicate_item"),))
        digest = self._adapter.registration_digest(registration)
        at = 0
        while at < len(self._hooks) and _order(self._hooks[at].hook_id) < _order(hook_id):
            at += 1
        self._hooks.insert(at, RegisteredHook(accepted, digest, provider))
        return verdict

    @property
    def hook_ids(self) -> Tuple[str, ...]:
        """The installed hook_ids, in dispatch (byte) order."""
        return tuple(h.hook_id for h in self._hooks)

    def get(self, hook_id: str) -> Optional[RegisteredHook]:
        return next((h for h in self._hooks if h.hook_id == hook_id), None)

    def subscribed(self, event_kind: str) -> Tuple[RegisteredHook, ...]:
        """The hooks subscribed to `event_kind`, in hook_id order."""
        return tuple(h for h in self._hooks if event_kind in h.registration["event_kinds"])

    def __iter__(self) -> Iterator[RegisteredHook]:
        return iter(tuple(self._hooks))

    def __len__(self) -> int:
        return len(self._hooks)

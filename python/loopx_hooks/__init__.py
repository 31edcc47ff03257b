"""loopx-hooks for Python: a callable adapter over the Node.js package's own
validators and identity helpers (RFC section 4: the TypeScript boundary owns
the acceptance policy; Python holds an adapter and never a second policy).

    with Adapter() as hooks:
        verdict = hooks.validate_hook_input(doc, registration)
        verdict.ok, verdict.violations   # (Violation(path, rule), ...)

The module-level functions use one shared Adapter, started on first use and
closed at exit. Standard library only; Python 3.9+; needs Node.js >= 20 and
the built loopx-hooks package (found beside this checkout, through
LOOPX_HOOKS_PACKAGE, or by Node's module resolution)."""

import atexit
import threading
from typing import Any, Dict, Iterable, Optional, Union

from ._adapter import SHIPPED, Adapter, Document
from ._dispatch import ABANDONED_PER_HOOK
from ._errors import AdapterError, AdapterTimeoutError, JournalError, LoopxHooksError, NodeNotFoundError, PackageNotFoundError
from ._registry import HookRegistry, RegisteredHook
from ._verdict import Verdict, Violation

__all__ = [
    "ABANDONED_PER_HOOK",
    "Adapter",
    "AdapterError",
    "AdapterTimeoutError",
    "HookRegistry",
    "JournalError",
    "LoopxHooksError",
    "NodeNotFoundError",
    "PackageNotFoundError",
    "RegisteredHook",
    "SHIPPED",
    "Verdict",
    "Violation",
    "canonical_json",
    "default_adapter",
    "dispatch_id",
    "intent",
    "intent_id",
    "registration_digest",
    "validate_dispatch_receipt",
    "validate_failure_receipt",
    "validate_hook_input",
    "validate_hook_result",
    "validate_intent_kind_definition",
    "validate_registration",
    "validate_shipped_dispatch_result",
    "validate_shipped_hook_input",
    "validate_shipped_receipt",
    "validate_shipped_registration",
    "validate_shipped_result",
    "validate_shipped_source",
    "validate_turn_start_receipt",
    "validate_turn_start_registration",
]

_shared: Optional[Adapter] = None
_shared_lock = threading.Lock()


def default_adapter() -> Adapter:
    """The shared Adapter of the module-level functions."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Adapter()
            atexit.register(_shared.close)
        return _shared


def validate_registration(doc: Document, kinds: Iterable[Document]) -> Verdict:
    return default_adapter().validate_registration(doc, kinds)


def validate_hook_input(doc: Document, registration: Document) -> Verdict:
    return default_adapter().validate_hook_input(doc, registration)


def validate_hook_result(doc: Document, registration: Document, dispatch_id: str, kinds: Iterable[Document]) -> Verdict:
    return default_adapter().validate_hook_result(doc, registration, dispatch_id, kinds)


def validate_intent_kind_definition(doc: Document) -> Verdict:
    return default_adapter().validate_intent_kind_definition(doc)


def validate_dispatch_receipt(doc: Document) -> Verdict:
    return default_adapter().validate_dispatch_receipt(doc)


def validate_failure_receipt(doc: Document) -> Verdict:
    return default_adapter().validate_failure_receipt(doc)


def validate_turn_start_registration(doc: Document) -> Verdict:
    return default_adapter().validate_turn_start_registration(doc)


def validate_turn_start_receipt(doc: Document) -> Verdict:
    return default_adapter().validate_turn_start_receipt(doc)


def validate_shipped_registration(doc: Document) -> Verdict:
    return default_adapter().validate_shipped_registration(doc)


def validate_shipped_source(doc: Document) -> Verdict:
    return default_adapter().validate_shipped_source(doc)


def validate_shipped_hook_input(doc: Document, registration: Document) -> Verdict:
    return default_adapter().validate_shipped_hook_input(doc, registration)


def validate_shipped_result(doc: Document, registration: Document, event_id: str) -> Verdict:
    return default_adapter().validate_shipped_result(doc, registration, event_id)


def validate_shipped_receipt(doc: Document) -> Verdict:
    return default_adapter().validate_shipped_receipt(doc)


def validate_shipped_dispatch_result(doc: Document) -> Verdict:
    return default_adapter().validate_shipped_dispatch_result(doc)


def registration_digest(registration: Document) -> str:
    return default_adapter().registration_digest(registration)


def dispatch_id(**parts: str) -> str:
    return default_adapter().dispatch_id(**parts)


def intent_id(*, dispatch_id: str, intent_kind: str, policy_version: str, payload: Any) -> str:
    return default_adapter().intent_id(
        dispatch_id=dispatch_id, intent_kind=intent_kind, policy_version=policy_version, payload=payload
    )


def intent(
    input: Document,
    kind: Union[str, Dict[str, Any]],
    *,
    operation: str,
    policy_version: str,
    payload: Any,
    budget: Optional[Dict[str, int]] = None,
    requested_write_scope: Optional[Iterable[str]] = None,
) -> Dict[str, Any]:
    """A well-formed intent answering `input` (see Adapter.intent)."""
    return default_adapter().intent(
        input,
        kind,
        operation=operation,
        policy_version=policy_version,
        payload=payload,
        budget=budget,
        requested_write_scope=requested_write_scope,
    )


def canonical_json(value: Any) -> str:
    return default_adapter().canonical_json(value)

"""The callable adapter: one long-lived `loopx-hooks serve --stdio` process
per Adapter, spoken to in newline-delimited JSON. Every judgement is the
Node.js library's own (RFC section 4: Python must not keep a second
acceptance policy); this module only moves documents and answers."""

import json
import queue
import subprocess
import threading
from collections import deque
from typing import Any, Dict, Iterable, Optional, Tuple, Union

from ._errors import AdapterError, AdapterTimeoutError, JournalError, LoopxHooksError
from ._locate import _node, _package_dir
from ._verdict import Verdict, Violation

PROTOCOL = 1

# A document: a Python value (dict, list, str-as-JSON-text, ...) or JSON text.
# As in the Node.js library, a str is JSON text, never a JSON string value.
Document = Any

_EOF = object()


# The dialect name of the contract LoopX shipped; "contract-v0" (the RFCs) is the default.
SHIPPED = "loopx-shipped-v0"

def _pointer(path: Tuple[Union[str, int], ...]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _not_json(value: Any) -> Tuple[Violation, ...]:
    """Where a Python value holds something JSON cannot (NaN, a set, a
    non-string key, an object): not_json_value at each such place, as the
    library reports for a JS value."""
    found = []
    stack = [((), value)]
    while stack:
        path, v = stack.pop()
        if v is None or isinstance(v, (bool, int, str)):
            continue
        if isinstance(v, float):
            if v != v or v in (float("inf"), float("-inf")):
                found.append(Violation(_pointer(path), "not_json_value"))
        elif isinstance(v, dict):
            for k, item in v.items():
                if isinstance(k, str):
                    stack.append((path + (k,), item))
                else:
                    found.append(Violation(_pointer(path), "not_json_value"))
        elif isinstance(v, (list, tuple)):
            stack.extend((path + (i,), item) for i, item in enumerate(v))
        else:
            found.append(Violation(_pointer(path), "not_json_value"))
    return tuple(sorted(set(found), key=lambda x: x.path))


def _text(doc: Document) -> Tuple[Optional[str], Tuple[Violation, ...]]:
    """The JSON text of a document, or the violations that keep it from having one."""
    if isinstance(doc, str):
        return doc, ()
    if isinstance(doc, (bytes, bytearray)):
        try:
            return bytes(doc).decode("utf-8"), ()
        except UnicodeDecodeError:
            # JSON text is UTF-8 (RFC 8259 section 8.1), as the CLI judges too.
            return None, (Violation("", "not_json_value"),)
    bad = _not_json(doc)
    if bad:
        return None, bad
    try:
        return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")), ()
    except RecursionError:
        # Nested past any contract's depth: the library says the same at the root.
        return None, (Violation("", "not_json_value"),)


def _context_text(value: Document, what: str) -> str:
    text, bad = _text(value)
    if text is None:
        raise LoopxHooksError("ERR_LOOPX_NOT_JSON_VALUE", f"{what} is not a JSON value", bad)
    return text


class Adapter:
    """One `loopx-hooks serve --stdio` process, started on first use.

    Calls are serialised (one request in flight); each waits at most
    `timeout` seconds, after which the process is stopped and the next call
    starts a new one. Use as a context manager, or call close()."""

    def __init__(
        self,
        *,
        node: Optional[str] = None,
        package_dir: Optional[str] = None,
        timeout: float = 10.0,
        start_timeout: float = 30.0,
    ):
        self._node = _node(node)
        self._root = _package_dir(self._node, package_dir)
        self.timeout = timeout
        self.start_timeout = start_timeout
        self._lock = threading.Lock()
        self._proc: Optional[subprocess.Popen] = None
        self._answers: "queue.Queue[Any]" = queue.Queue()
        self._stderr: "deque[str]" = deque(maxlen=20)
        self._next_id = 0
        self.version: Optional[str] = None
        # Held across a whole dispatch (prepare, producers, finish), so another
        # thread cannot reopen the serve process's journal in between.
        self.dispatch_lock = threading.RLock()
        self._journal_key: Optional[str] = None

    # -- process ------------------------------------------------------------

    def _start(self) -> None:
        try:
            proc = subprocess.Popen(
                [self._node, str(self._root / "bin" / "loopx-hooks.js"), "serve", "--stdio"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(self._root),
            )
        except OSError as error:
            raise AdapterError(f"cannot start loopx-hooks serve: {error.strerror or error}") from None
        answers: "queue.Queue[Any]" = queue.Queue()
        stderr: "deque[str]" = deque(maxlen=20)

        def read_out() -> None:
            for line in proc.stdout:  # type: ignore[union-attr]
                answers.put(line)
            answers.put(_EOF)

        def read_err() -> None:
            for line in proc.stderr:  # type: ignore[union-attr]
                stderr.append(line.decode("utf-8", "replace").rstrip())

        threading.Thread(target=read_out, daemon=True).start()
        threading.Thread(target=read_err, daemon=True).start()
        self._proc, self._answers, self._stderr = proc, answers, stderr
        hello = self._exchange({"op": "hello"}, self.start_timeout)
        if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL:
            self._stop()
            raise AdapterError(f"loopx-hooks serve speaks another protocol than {PROTOCOL}")
        self.version = hello.get("version")

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        self._journal_key = None
        if proc is None:
            return
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass

    def _gone(self) -> AdapterError:
        proc = self._proc
        self._stop()
        last = self._stderr[-1] if self._stderr else ""
        status = proc.returncode if proc is not None else None
        return AdapterError(f"loopx-hooks serve exited (status {status})" + (f": {last}" if last else ""))

    def _exchange(self, request: dict, timeout: float) -> Any:
        proc = self._proc
        assert proc is not None
        self._next_id += 1
        request_id = self._next_id
        line = json.dumps({"id": request_id, **request}, ensure_ascii=True) + "\n"
        try:
            proc.stdin.write(line.encode("ascii"))  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            raise self._gone() from None
        try:
            raw = self._answers.get(timeout=timeout)
        except queue.Empty:
            proc.kill()
            self._stop()
            raise AdapterTimeoutError(f"loopx-hooks serve did not answer within {timeout} s") from None
        if raw is _EOF:
            raise self._gone()
        try:
            answer = json.loads(raw)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or ("result" not in answer and not isinstance(answer.get("error"), dict)):
            self._stop()
            raise AdapterError("loopx-hooks serve answered a line that is not a response")
        if answer.get("id") != request_id:
            # Requests are answered in order, one at a time: anything else is a broken stream.
            self._stop()
            raise AdapterError("loopx-hooks serve answered out of order")
        if "error" in answer:
            e = answer["error"]
            violations = e.get("violations")
            code = e.get("code", "ERR_LOOPX_INTERNAL")
            raise (JournalError if code.startswith("ERR_LOOPX_JOURNAL_") else LoopxHooksError)(
                code,
                e.get("message", ""),
                tuple(Violation(v["path"], v["rule"]) for v in violations) if violations is not None else None,
            )
        return answer["result"]

    def call(self, op: str, **fields: Any) -> Any:
        """One raw request (see `loopx-hooks serve --help`); its result."""
        with self._lock:
            if self._proc is None:
                self._start()
            return self._exchange({"op": op, **fields}, self.timeout)

    def post_writeback_transaction(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """LoopX's `capability_hook.post_writeback.transaction`, one phase
        (`preflight` or `finalize`), answered by the package's engine over
        LoopX's sidecar folder (docs/loopx.md). A request that breaks the
        protocol raises `LoopxHooksError` (`ERR_LOOPX_TRANSACTION_*`)."""
        if not isinstance(request, dict):
            raise LoopxHooksError("ERR_LOOPX_INVALID_ARGUMENT", "a transaction request is a dict")
        return self.call("capability_hook.post_writeback.transaction", request=request)

    def open_journal(self, fields: dict) -> None:
        """Opens the serve process's one journal with these `open` fields,
        unless it already is; a journal opened with other fields is closed
        first (what it prepared and never finished stays owed)."""
        key = json.dumps(fields, sort_keys=True)
        with self._lock:
            if self._proc is None:
                self._start()
            if self._journal_key == key:
                return
            if self._journal_key is not None:
                self._journal_key = None
                self._exchange({"op": "close"}, self.timeout)
            self._exchange({"op": "open", **fields}, self.timeout)
            self._journal_key = key

    def close(self) -> None:
        with self._lock:
            self._stop()

    def __enter__(self) -> "Adapter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the library's functions ---------------------------------------------

    def validate(self, contract: str, doc: Document, **context: Any) -> Verdict:
        """The verdict of `contract`'s validator (a name as in `loopx-hooks
        validate`, e.g. "hook-input") on `doc`, with its context."""
        text, bad = _text(doc)
        if text is None:
            return Verdict(False, bad)
        result = self.call("validate", contract=contract, document=text, **context)
        if result["ok"]:
            try:
                value = json.loads(text)
            except ValueError:  # accepted by the library; Python's reader is no judge
                value = None
            return Verdict(True, (), value)
        return Verdict(False, tuple(Violation(v["path"], v["rule"]) for v in result["violations"]))

    def _kinds(self, kinds: Iterable[Document]) -> list:
        if isinstance(kinds, (str, bytes, dict)):
            kinds = [kinds]
        return [_context_text(k, "an intent kind definition") for k in kinds]

    def validate_registration(self, doc: Document, kinds: Iterable[Document]) -> Verdict:
        return self.validate("registration", doc, kinds=self._kinds(kinds))

    def validate_hook_input(self, doc: Document, registration: Document) -> Verdict:
        return self.validate("hook-input", doc, registration=_context_text(registration, "registration"))

    def validate_hook_result(
        self, doc: Document, registration: Document, dispatch_id: str, kinds: Iterable[Document]
    ) -> Verdict:
        return self.validate(
            "hook-result",
            doc,
            registration=_context_text(registration, "registration"),
            dispatch_id=dispatch_id,
            kinds=self._kinds(kinds),
        )

    def validate_intent_kind_definition(self, doc: Document) -> Verdict:
        return self.validate("intent-kind", doc)

    def validate_dispatch_receipt(self, doc: Document) -> Verdict:
        return self.validate("dispatch-receipt", doc)

    def validate_failure_receipt(self, doc: Document) -> Verdict:
        return self.validate("failure-receipt", doc)

    def validate_turn_start_registration(self, doc: Document) -> Verdict:
        return self.validate("turn-start-registration", doc)

    def validate_turn_start_receipt(self, doc: Document) -> Verdict:
        return self.validate("turn-start-receipt", doc)

    # -- the loopx-shipped-v0 dialect (the contract LoopX shipped) -----------
    # `validate(contract, doc, dialect="loopx-shipped-v0", ...)` reaches any of
    # them by name; an unknown dialect is LoopxHooksError ERR_LOOPX_UNKNOWN_DIALECT.

    def validate_shipped_registration(self, doc: Document) -> Verdict:
        return self.validate("registration", doc, dialect=SHIPPED)

    def validate_shipped_source(self, doc: Document) -> Verdict:
        return self.validate("source", doc, dialect=SHIPPED)

    def validate_shipped_hook_input(self, doc: Document, registration: Document) -> Verdict:
        return self.validate(
            "hook-input", doc, dialect=SHIPPED, registration=_context_text(registration, "registration")
        )

    def validate_shipped_result(self, doc: Document, registration: Document, event_id: str) -> Verdict:
        return self.validate(
            "hook-result",
            doc,
            dialect=SHIPPED,
            registration=_context_text(registration, "registration"),
            event_id=event_id,
        )

    def validate_shipped_receipt(self, doc: Document) -> Verdict:
        return self.validate("sidecar-receipt", doc, dialect=SHIPPED)

    def validate_shipped_dispatch_result(self, doc: Document) -> Verdict:
        return self.validate("dispatch-result", doc, dialect=SHIPPED)

    def registration_digest(self, registration: Document) -> str:
        return self.call("registration_digest", registration=_context_text(registration, "registration"))

    def dispatch_id(
        self,
        *,
        receipt_id: str,
        effect_id: str,
        hook_id: str,
        capability_id: str,
        registration_digest: str,
        registration_schema_version: str,
        event_kind: str,
    ) -> str:
        parts = {
            "receipt_id": receipt_id,
            "effect_id": effect_id,
            "hook_id": hook_id,
            "capability_id": capability_id,
            "registration_digest": registration_digest,
            "registration_schema_version": registration_schema_version,
            "event_kind": event_kind,
        }
        return self.call("dispatch_id", parts=parts)

    def intent_id(self, *, dispatch_id: str, intent_kind: str, policy_version: str, payload: Any) -> str:
        return self.call(
            "intent_id",
            dispatch_id=dispatch_id,
            intent_kind=intent_kind,
            policy_version=policy_version,
            payload=_context_text(payload, "payload") if not isinstance(payload, str) else json.dumps(payload),
        )

    def intent(
        self,
        input: Document,
        kind: Union[str, Dict[str, Any]],
        *,
        operation: str,
        policy_version: str,
        payload: Any,
        budget: Optional[Dict[str, int]] = None,
        requested_write_scope: Optional[Iterable[str]] = None,
    ) -> Dict[str, Any]:
        """A well-formed intent of `kind` answering `input` (the hook input the
        provider got), as the library's `intent()` builds it: `intent_id`,
        `hook_id`, `capability_id` and `source_dispatch_id` filled in from
        the input, `budget` defaulting to the contract's, an empty write scope,
        and the fixed members. `kind` is the intent kind's name or its
        definition. It judges nothing: the dispatcher validates every result."""
        name = kind.get("intent_kind") if isinstance(kind, dict) else kind
        if not isinstance(name, str):
            raise LoopxHooksError("ERR_LOOPX_INVALID_ARGUMENT", "intent: kind must be an intent kind or its name")
        fields: Dict[str, Any] = {
            "input": _context_text(input, "input"),
            "intent_kind": name,
            "operation": operation,
            "policy_version": policy_version,
            "payload": _context_text(payload, "payload") if not isinstance(payload, str) else json.dumps(payload),
        }
        if budget is not None:
            fields["budget"] = _context_text(budget, "budget")
        if requested_write_scope is not None:
            if isinstance(requested_write_scope, (str, bytes)):
                raise LoopxHooksError(
                    "ERR_LOOPX_INVALID_ARGUMENT", "intent: requested_write_scope must be a list of scopes"
                )
            fields["requested_write_scope"] = _context_text(list(requested_write_scope), "requested_write_scope")
        return self.call("intent", **fields)

    def canonical_json(self, value: Any) -> str:
        """RFC 8785 canonical JSON of a Python value (a str is a JSON string
        value here, as in the library's canonicalJson)."""
        text = json.dumps(value) if isinstance(value, str) else _context_text(value, "value")
        return self.call("canonical_json", value=text)

"""Dispatch from a Python host: the engine's own two phases over the serve
process's one open journal, with the registered producers called here in
between. Admission, order, identities, checkpoints, validation, records and
replays are the engine's (serve's `prepare`, `begin` and `finish` ops); this
module only calls the producers, each on a thread of its own waited for at
most the limit the engine gives, and reduces what happened to an outcome: a
result, a raised error (only a code crosses, never its text), or a timeout."""

import contextvars
import json
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._adapter import Adapter, Document, _context_text, _not_json
from ._errors import LoopxHooksError

# A journal target as the Node.js API takes it: a SQLite path, a postgres://
# URL, {"path": ...}, or {"postgres": {"connectionString": ..., "schema"?, "caFile"?}}.
JournalTarget = Any


def _absolute(journal: JournalTarget) -> JournalTarget:
    """`journal` with its file paths (a SQLite path, {"path": ...}, and a
    PostgreSQL target's caFile) made absolute against this process's working
    directory: the serve process runs elsewhere (in the package's folder), and
    a relative path means the caller's."""
    if isinstance(journal, os.PathLike):
        journal = os.fspath(journal)
    if isinstance(journal, str):
        # ":memory:" is passed on as given, for the library to refuse by name.
        if not journal or journal == ":memory:" or journal.startswith(("postgres://", "postgresql://")):
            return journal
        return os.path.abspath(journal)
    if isinstance(journal, dict):
        path = journal.get("path")
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if isinstance(path, str) and path and path != ":memory:":
            return {**journal, "path": os.path.abspath(path)}
        postgres = journal.get("postgres")
        if isinstance(postgres, dict) and isinstance(postgres.get("caFile"), str) and postgres["caFile"]:
            return {**journal, "postgres": {**postgres, "caFile": os.path.abspath(postgres["caFile"])}}
    return journal


# A producer: the hook's input (a dict) in, its result (a dict) out.
Producer = Callable[[Any], Any]

_producing = threading.local()

_CODE_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _code_of(error: BaseException) -> str:
    """The code a raised error crosses as: its own `code` when it is a short
    token (a host's typed error), else "exception"; never its message."""
    code = getattr(error, "code", None)
    if isinstance(code, str) and 0 < len(code) <= 64 and code[0].isalpha() and set(code) <= _CODE_CHARS:
        return code
    return "exception"


def _reply(result: Any) -> Dict[str, Any]:
    if _not_json(result):
        return {"status": "not_json"}
    try:
        text = json.dumps(result, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return {"status": "not_json"}
    return {"status": "returned", "result": text}


# How many of one hook's timed-out producer calls may still be running before
# the hook is quarantined: its calls then time out without being started, so
# a producer that never returns holds at most this many threads.
ABANDONED_PER_HOOK = 4


class _Call:
    """One producer call on a daemon thread of its own, so that the
    dispatching thread can stop waiting for it at the engine's limit; a
    synchronous callable cannot be stopped, so its thread runs on until the
    callable returns, and what it returns then is dropped."""

    def __init__(self, hook_id: str, provider: Any, value: Any, limit_ms: float):
        self._provider = provider
        self._value = value
        self._limit_ms = limit_ms
        self.outcome: Optional[Dict[str, Any]] = None
        # Not an Exception (SystemExit, KeyboardInterrupt): ends the dispatch, as it would in process.
        self.escaped: Optional[BaseException] = None
        # The caller's context variables (a request id, a tracing span) go with the call, as if in process.
        context = contextvars.copy_context()
        self.thread = threading.Thread(
            target=context.run, args=(self._run,), name=f"loopx-hooks producer {hook_id}", daemon=True
        )

    def _run(self) -> None:
        # Thread-local: the guard sees a dispatch from inside the producer on the producer's own thread.
        _producing.active = True
        started = time.monotonic()
        try:
            result = self._provider(self._value)
        except Exception as error:  # isolated: the engine records producer_failed
            self.outcome = {"status": "raised", "code": _code_of(error)}
            return
        except BaseException as error:
            self.escaped = error
            return
        if (time.monotonic() - started) * 1000.0 > self._limit_ms:
            self.outcome = {"status": "timed_out"}
        else:
            self.outcome = _reply(result)


class Dispatching:
    """The two phases for one set of registrations over one adapter's serve
    process. It sees only what dispatching needs (the registrations' texts,
    a producer by hook_id, the dialect and the kinds), so it depends on no
    registry type."""

    def __init__(
        self,
        adapter: Adapter,
        *,
        dialect: Optional[str],
        kind_texts: Sequence[str],
        registrations: Callable[[], Sequence[Tuple[str, str]]],
        provider: Callable[[str], Optional[Producer]],
    ):
        self._adapter = adapter
        self._dialect = dialect
        self._kind_texts = list(kind_texts)
        # (hook_id, accepted JSON text) of each registration, in hook_id order.
        self._registrations = registrations
        self._provider = provider
        # Per hook_id, the threads of its calls that timed out and may still run.
        self._abandoned: Dict[str, List[threading.Thread]] = {}

    def _open(self, journal: JournalTarget, profile: Optional[Dict[str, Any]]) -> None:
        hooks = list(self._registrations())
        missing = [hook_id for hook_id, _ in hooks if self._provider(hook_id) is None]
        if missing:
            raise LoopxHooksError("ERR_LOOPX_INVALID_ARGUMENT", f"hook {missing[0]} has no producer to dispatch to")
        fields: Dict[str, Any] = {"journal": _absolute(journal), "registrations": [text for _, text in hooks]}
        if self._dialect is not None:
            fields["dialect"] = self._dialect
        else:
            fields["kinds"] = self._kind_texts
        if profile is not None:
            fields["profile"] = profile
        self._adapter.open_journal(fields)

    def _call(self, call: Dict[str, Any], limit: Dict[str, Any]) -> Dict[str, Any]:
        """One producer call's outcome, waited for at most the engine's limit."""
        hook_id = call["hook_id"]
        running = [t for t in self._abandoned.get(hook_id, ()) if t.is_alive()]
        self._abandoned[hook_id] = running
        if len(running) >= ABANDONED_PER_HOOK:
            # Quarantined: the attempt is counted (begin) and timed out, and no thread is spent on it.
            return {"status": "timed_out"}
        worker = _Call(hook_id, self._provider(hook_id), json.loads(call["input"]), limit["ms"])
        worker.thread.start()
        try:
            worker.thread.join(limit["ms"] / 1000.0)
        finally:
            late = worker.thread.is_alive()
            if late:
                running.append(worker.thread)
        if late:
            return {"status": "timed_out"}
        if worker.escaped is not None:
            raise worker.escaped
        assert worker.outcome is not None
        return worker.outcome

    def _run(self, plan: Dict[str, Any]) -> Dict[str, Any]:
        """The engine outcome of a prepared plan: producers in plan (hook_id) order, then finish."""
        if "done" in plan:
            return plan["done"]
        ticket = plan["ticket"]
        outcomes: List[Dict[str, Any]] = []
        try:
            for call in plan["calls"]:
                # Queues the call's checkpoint (it counts the attempt) just before the producer runs.
                limit = self._adapter.call("begin", ticket=ticket, slot=call["slot"])["limit"]
                if limit is None:
                    outcomes.append({"status": "not_started"})
                    continue
                outcomes.append(self._call(call, limit))
        except BaseException:
            # Interrupted (KeyboardInterrupt, a lost serve process): the checkpoints stay owed for recover().
            try:
                self._adapter.call("cancel", ticket=ticket)
            except Exception:
                pass
            raise
        return self._adapter.call("finish", ticket=ticket, outcomes=outcomes)["done"]

    def _guard(self) -> None:
        if getattr(_producing, "active", False):
            raise LoopxHooksError("ERR_LOOPX_REENTRANT_DISPATCH", "dispatch called from inside a producer")

    def dispatch(
        self, request: Document, journal: JournalTarget, profile: Optional[Dict[str, Any]]
    ) -> Dict[str, Any]:
        self._guard()
        text = _context_text(request, "the request")
        with self._adapter.dispatch_lock:
            self._open(journal, profile)
            outcome = self._run(self._adapter.call("prepare", request=text))
        return outcome["shipped"] if self._dialect is not None else outcome

    def recover(self, journal: JournalTarget, profile: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        self._guard()
        with self._adapter.dispatch_lock:
            self._open(journal, profile)
            items = self._adapter.call("recover_items")
            hooks: List[Any] = []
            for request, hook_id in zip(items["requests"], items["hookIds"]):
                plan = self._adapter.call("prepare", request=request, only_hook_id=hook_id)
                hooks.extend(self._run(plan)["hooks"])
        return {"outcomes": hooks, "skipped": items["skipped"], "ledgersSkipped": items["ledgersSkipped"]}

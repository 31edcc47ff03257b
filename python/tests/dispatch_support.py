"""Shared by the Python dispatch tests: registrations made from the RFC
example, committed writebacks, producers that count their calls, and a
periodic-report producer written the way LoopX's own would be."""

import copy
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from support import KIND_TEXT, ROOT, example

from loopx_hooks import Adapter, HookRegistry

ENABLED = {"enabled": True}


def registration(
    hook_id: str, timeout_ms: Optional[int] = None, event_kinds=("todo_completed",), invocations: Optional[int] = None
) -> dict:
    doc = copy.deepcopy(example("registration"))
    doc["hook_id"] = hook_id
    doc["event_kinds"] = list(event_kinds)
    if timeout_ms is not None:
        doc["budget"]["timeout_ms"] = timeout_ms
    if invocations is not None:
        doc["budget"]["max_invocations_per_dispatch"] = invocations
    return doc


def request(tag: str, event_kind: str = "todo_completed") -> dict:
    """A committed writeback (DispatchRequest), distinct per tag."""
    return {
        "settlement": {
            "goal_id": f"goal_{tag}",
            "agent_id": "agent_py",
            "todo_id": f"todo_{tag}",
            "turn_instance_id": f"turn_{tag}",
            "effect_id": f"effect_{tag}",
        },
        "receipt": {
            "receipt_id": f"receipt_{tag}",
            "effect_id": f"effect_{tag}",
            "step_kind": "durable_writeback",
            "status": "committed",
            "checkpointed": True,
            "state_revision": f"revision_{tag}",
            "committed_at": "2026-08-26T00:00:00Z",
        },
        "event": {"event_kind": event_kind, "fact_refs": [f"fact_{tag}"]},
    }


class Counted:
    """A producer that counts its calls and keeps their inputs."""

    def __init__(self, answer: Callable[[dict], Any]):
        self.answer = answer
        self.inputs: List[dict] = []

    @property
    def calls(self) -> int:
        return len(self.inputs)

    def __call__(self, value: dict) -> Any:
        self.inputs.append(value)
        return self.answer(value)


def trigger_evaluation(adapter: Adapter, segment: str = "segment") -> Callable[[dict], dict]:
    """The RFC's periodic-report producer: one trigger_evaluation intent,
    its id computed by the library (contract-v0 section 3)."""

    def produce(value: dict) -> dict:
        payload = {"segment_ref": f"{segment}_{value['source']['todo_id']}", "source_event_refs": ["event_opaque"]}
        intent = copy.deepcopy(example("hook_result")["intents"][0])
        intent.update(
            hook_id=value["hook_id"],
            capability_id=value["capability_id"],
            source_dispatch_id=value["dispatch_id"],
            payload=payload,
            intent_id=adapter.intent_id(
                dispatch_id=value["dispatch_id"],
                intent_kind=intent["intent_kind"],
                policy_version=intent["policy_version"],
                payload=payload,
            ),
        )
        return {"schema_version": "loopx_post_writeback_hook_result_v0", "status": "proposed", "intents": [intent]}

    return produce


def not_applicable(_value: dict) -> dict:
    return {"schema_version": "loopx_post_writeback_hook_result_v0", "status": "not_applicable", "intents": []}


def new_registry(adapter: Adapter) -> HookRegistry:
    return HookRegistry(adapter, [KIND_TEXT])


class TempDir:
    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="loopx-py-dispatch-")

    def db(self, name: str) -> str:
        return os.path.join(self.path, f"{name}.db")

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def journal_rows(db: Any) -> List[Dict[str, Any]]:
    """The journal's dispatch rows (a file, or a {"postgres": ...} target), read by the CLI's own reader."""
    where = ["--db", db] if isinstance(db, str) else ["--db", db["postgres"]["connectionString"], "--schema", db["postgres"]["schema"]]
    done = subprocess.run(
        ["node", str(ROOT / "bin" / "loopx-hooks.js"), "journal", "dispatches", *where, "--json"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    rows = json.loads(done.stdout)
    return rows["items"] if isinstance(rows, dict) else rows


def until(check: Callable[[], Any], seconds: float = 20.0) -> Any:
    """Polls `check` until it answers truthy (a condition, not a timing)."""
    deadline = time.monotonic() + seconds
    while True:
        answer = check()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def returns_within(seconds: float, call: Callable[[], Any]) -> Any:
    """What `call` returns, run on a thread of its own; an AssertionError
    when it has not returned after `seconds` (a generous bound that proves
    a hang absent, never a measure of speed)."""
    answer: List[Any] = []
    raised: List[BaseException] = []

    def run() -> None:
        try:
            answer.append(call())
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise AssertionError(f"no answer after {seconds} s")
    if raised:
        raise raised[0]
    return answer[0]


class Hangs:
    """A producer that does not return until released (the test releases it
    when it ends, so that no thread outlives the test), then answers with
    `answer`; it counts its calls and keeps the threads it ran on."""

    def __init__(self, answer: Callable[[dict], Any] = not_applicable) -> None:
        self.answer = answer
        self.release = threading.Event()
        self.threads: List[threading.Thread] = []

    @property
    def calls(self) -> int:
        return len(self.threads)

    def __call__(self, value: dict) -> Any:
        self.threads.append(threading.current_thread())
        self.release.wait(3600)
        return self.answer(value)

    def end(self) -> None:
        """Releases every call and waits until every producer thread ended,
        also one started and not yet in this producer: then `calls` is final."""
        self.release.set()
        for thread in threading.enumerate():
            if thread.name.startswith("loopx-hooks producer"):
                thread.join(60)

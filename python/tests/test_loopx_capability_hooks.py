"""LoopX's own Python tests of its post-writeback hooks
(tests/control_plane/test_post_writeback_capability_hooks.py), re-expressed
through this package's Python adapter. Where LoopX's scenario runs its
composition root over a runtime root, this one runs the same two-phase
transaction (`Adapter.post_writeback_transaction`), calling the producers in
between as LoopX's composition root does, over the same sidecar folder; where
it is about producers whose results cannot cross as JSON, it registers and
dispatches them through `HookRegistry(dialect=SHIPPED)`. Each test's
docstring names the LoopX test it follows. The scenarios that depend on
LoopX's own modules are listed, with the reason, in docs/dialects.md ("LoopX's
own tests")."""

import json
import os
import time
import unittest
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from dispatch_support import ENABLED, TempDir
from periodic_report_producer import PeriodicReportProducer
from support import ROOT  # noqa: F401 (puts the adapter on the path)

from loopx_hooks import SHIPPED, Adapter, HookRegistry, LoopxHooksError

REQUEST = "loopx_post_writeback_hook_transaction_request_v0"
RESULT = "loopx_post_writeback_capability_hook_result_v0"
HOOK = "periodic_report.stage_completion"
STAGE = {"schema_version": "periodic_report_stage_completion_receipt_v0", "stage_identity": "stage-123"}
Producer = Callable[[Dict[str, Any]], Any]


def registration(hook_id: str = HOOK, *, policy_version: str = "v0", max_result_bytes: int = 16384, **fields: Any):
    """A registration as LoopX's PostWritebackHookRegistration writes its contract by default."""
    return {
        "schema_version": "loopx_post_writeback_capability_hook_registration_v0",
        "hook_id": hook_id,
        "capability_id": "periodic-report",
        "policy_version": policy_version,
        "phase": "post_writeback",
        "event_kinds": ["refresh_state"],
        "intent_kinds": ["periodic_report.trigger_evaluation"],
        "budget": {"max_invocations_per_dispatch": 1, "max_input_bytes": 65536, "max_result_bytes": max_result_bytes},
        "failure_policy": "isolate",
        "requested_read_scope": ["stage_completion"],
        "requested_write_scope": [],
        **fields,
    }


def hook_input() -> Dict[str, Any]:
    """A ready hook input whose receipt is a rollout event (LoopX's legacy path)."""
    return {
        "schema_version": "loopx_post_writeback_capability_hook_input_v0",
        "receipt": {
            "schema_version": "loopx_rollout_event_v0",
            "event_id": "evt-stage-1",
            "event_kind": "refresh_state",
            "status": "appended",
            "recorded_at": "2026-08-30T01:00:00+08:00",
            "durable": True,
        },
        "identity": {
            "goal_id": "goal-1",
            "agent_id": "agent-1",
            "todo_id": "todo-1",
            "turn_instance_id": "turn-1",
            "effect_id": "goal-1:agent-1:todo-1:turn-1",
        },
        "state_version": "vision-revision-2",
        "projection": {"stage_completion": dict(STAGE)},
    }


def source() -> Dict[str, Any]:
    """A committed writeback's source, as LoopX's composition roots send it."""
    return {
        "schema_version": "loopx_post_writeback_hook_source_v0",
        "event_kind": "refresh_state",
        "status": "committed",
        "durable": True,
        "identity": dict(hook_input()["identity"]),
        "state_version": "vision-revision-2",
        "committed_at": "2026-08-30T01:00:00+08:00",
        "projection": {"stage_completion": dict(STAGE)},
    }


def mutated_source(mutation: str) -> Dict[str, Any]:
    """One of the input-construction defects LoopX's test lists."""
    doc = source()
    identity = doc["identity"]
    if mutation in ("goal_id", "agent_id", "turn_instance_id", "effect_id"):
        identity[mutation] = ""
    elif mutation in ("event_kind", "state_version", "committed_at"):
        doc[mutation] = ""
    elif mutation == "todo_id_not_a_string":
        identity["todo_id"] = 123
    elif mutation == "identity_not_an_object":
        doc["identity"] = 123
    elif mutation == "durable_not_a_boolean":
        doc["durable"] = "committed"
    elif mutation == "unknown_source_field":
        doc["extra_field"] = True
    elif mutation == "empty_agent_id_and_state_version":
        identity["agent_id"] = ""
        doc["state_version"] = ""
    else:
        raise AssertionError(mutation)
    return doc


SOURCE_REJECTION_MUTATIONS = [
    "goal_id",
    "agent_id",
    "turn_instance_id",
    "effect_id",
    "event_kind",
    "state_version",
    "committed_at",
    "todo_id_not_a_string",
    "identity_not_an_object",
    "durable_not_a_boolean",
    "unknown_source_field",
    "empty_agent_id_and_state_version",
]


def producer(hook_id: str = HOOK, key: str = "periodic-report:stage-123", payload: Any = None, calls=None) -> Producer:
    """LoopX's test producer: one trigger-evaluation intent bound to its input's event."""

    def produce(value: Dict[str, Any]) -> Dict[str, Any]:
        if calls is not None:
            calls.append(hook_id)
        return {
            "schema_version": RESULT,
            "hook_id": hook_id,
            "capability_id": "periodic-report",
            "phase": "post_writeback",
            "status": "intent",
            "intent": {
                "schema_version": "loopx_capability_intent_v0",
                "intent_kind": "periodic_report.trigger_evaluation",
                "idempotency_key": key,
                "source_receipt_id": value["receipt"]["event_id"],
                "payload": payload if payload is not None else {"stage_identity": "stage-123"},
                "requested_write_scope": [],
            },
        }

    return produce


def raising(_: Dict[str, Any]) -> Any:
    raise RuntimeError("boom")


Hook = Tuple[Dict[str, Any], Producer]


class Host:
    """What LoopX's composition root does around the transaction: a
    preflight, each planned provider called with its admitted input (a raise
    is `producer_failed`), a finalize with the outcomes. It records the phases
    it sent, as LoopX's test records its runtime calls."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.phases: List[str] = []

    def dispatch(
        self,
        hooks: List[Hook],
        *,
        source: Optional[Dict[str, Any]] = None,
        hook_input: Optional[Dict[str, Any]] = None,
        runtime_root: Optional[str] = None,
    ) -> Dict[str, Any]:
        request = {
            "schema_version": REQUEST,
            "phase": "preflight",
            "runtime_root": runtime_root,
            "source": source,
            "hook_input": hook_input,
            "registrations": [reg for reg, _ in hooks],
            "transaction_id": None,
            "provider_outcomes": [],
        }
        producers: Dict[str, Producer] = {}
        for reg, produce in hooks:
            producers.setdefault(reg["hook_id"], produce)
        self.phases.append("preflight")
        preflight = self.adapter.post_writeback_transaction(request)
        if preflight["dispatch"] is not None:
            return preflight["dispatch"]
        outcomes = []
        for plan in preflight["provider_plan"]:
            outcome = {k: plan[k] for k in ("dispatch_id", "hook_id", "capability_id", "attempt_count")}
            try:
                outcome.update(status="returned", result=producers[plan["hook_id"]](plan["hook_input"]))
            except Exception:
                outcome.update(status="producer_failed", result=None)
            outcomes.append(outcome)
        self.phases.append("finalize")
        finalize = {"phase": "finalize", "transaction_id": preflight["transaction_id"], "provider_outcomes": outcomes}
        final = self.adapter.post_writeback_transaction({**request, **finalize})
        return final["dispatch"]


class LoopxTransactionScenarios(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = TempDir()
        self.root = self.tmp.path
        self.adapter = Adapter(timeout=60)
        self.host = Host(self.adapter)

    def tearDown(self) -> None:
        self.adapter.close()
        self.tmp.remove()

    def folder(self) -> Path:
        return Path(self.root) / "goals" / "goal-1" / "post_writeback_hooks"

    def receipts(self) -> List[Dict[str, Any]]:
        if not self.folder().is_dir():
            return []
        return [json.loads(p.read_text("utf-8")) for p in sorted(self.folder().glob("*.json"))]

    def test_incomplete_source_is_one_typed_composition_rejection(self):
        """Follows test_incomplete_source_is_one_typed_composition_rejection:
        every defect LoopX lists refuses the source as one typed rejection
        (here `ERR_LOOPX_TRANSACTION_SOURCE_INVALID`, LoopX's
        post_writeback_source_invalid), before any producer, writing nothing."""
        for mutation in SOURCE_REJECTION_MUTATIONS:
            with self.subTest(mutation=mutation):
                calls: List[str] = []
                with self.assertRaises(LoopxHooksError) as raised:
                    hooks = [(registration(), producer(calls=calls))]
                    self.host.dispatch(hooks, source=mutated_source(mutation), runtime_root=self.root)
                self.assertEqual(raised.exception.code, "ERR_LOOPX_TRANSACTION_SOURCE_INVALID")
                self.assertEqual(calls, [])
                self.assertEqual(self.receipts(), [])

    def test_valid_source_dispatches_the_provider_and_writes_a_receipt(self):
        """Follows test_valid_source_dispatches_the_provider_and_writes_a_receipt."""
        calls: List[str] = []
        hooks = [(registration(), producer(calls=calls))]
        dispatch = self.host.dispatch(hooks, source=source(), runtime_root=self.root)
        self.assertEqual((dispatch["failures"], dispatch["intent_count"], calls), ([], 1, [HOOK]))
        self.assertEqual([r["status"] for r in self.receipts()], ["intent_recorded"])

    def test_post_writeback_dispatch_returns_one_effect_free_intent(self):
        """Follows test_post_writeback_dispatch_returns_one_effect_free_intent."""
        dispatch = self.host.dispatch([(registration(), producer())], hook_input=hook_input())
        self.assertEqual((dispatch["intent_count"], dispatch["failures"]), (1, []))
        self.assertIs(dispatch["primary_writeback_preserved"], True)
        self.assertIs(dispatch["external_writes_performed"], False)

    def test_post_writeback_dispatch_accepts_todoless_replan_identity(self):
        """Follows test_post_writeback_dispatch_accepts_todoless_replan_identity:
        a source's `todo_id` of null or "" is a Todo-less replan."""
        for todo_id in (None, ""):
            with self.subTest(todo_id=todo_id):
                doc = source()
                doc["identity"]["todo_id"] = todo_id
                dispatch = self.host.dispatch([(registration(), producer())], source=doc)
                counts = (dispatch["invoked_count"], dispatch["intent_count"], dispatch["failures"])
                self.assertEqual(counts, (1, 1, []))

    def test_post_writeback_legacy_lock_uses_the_admitted_goal_path(self):
        """Follows test_post_writeback_legacy_lock_uses_the_admitted_goal_path:
        a padded goal id is admitted stripped, and the receipt lands in that
        goal's folder (LoopX's legacy lock on it is LoopX's own)."""
        padded = hook_input()
        padded["identity"]["goal_id"] = " goal-1 "
        dispatch = self.host.dispatch([(registration(), producer())], hook_input=padded, runtime_root=self.root)
        self.assertEqual((dispatch["invoked_count"], dispatch["intent_count"], dispatch["failures"]), (1, 1, []))
        self.assertEqual(len(self.receipts()), 1)

    def test_post_writeback_dispatch_isolates_failures_and_duplicate_hooks(self):
        """Follows test_post_writeback_dispatch_isolates_failures_and_duplicate_hooks."""
        hooks = [
            (registration(), producer()),
            (registration(), producer()),
            (registration("periodic_report.failed"), raising),
        ]
        dispatch = self.host.dispatch(hooks, hook_input=hook_input())
        self.assertEqual(dispatch["intent_count"], 1)
        self.assertEqual({f["error_code"] for f in dispatch["failures"]}, {"duplicate_hook_id", "producer_failed"})

    def test_post_writeback_dispatch_isolates_oversized_provider_result(self):
        """Follows test_post_writeback_dispatch_isolates_oversized_provider_result:
        a 2,000,000-character result against a 1,024-byte budget is
        `contract_rejected`, stored as a retryable failure; the other hook records."""
        oversized = registration("periodic_report.oversized_transport", max_result_bytes=1024)
        hooks = [(oversized, lambda _: {"payload": "x" * 2_000_000}), (registration(), producer())]
        dispatch = self.host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual((dispatch["invoked_count"], dispatch["intent_count"], len(dispatch["failures"])), (2, 1, 1))
        failure = dispatch["failures"][0]
        self.assertEqual(
            (failure["hook_id"], failure["capability_id"], failure["error_code"]),
            ("periodic_report.oversized_transport", "periodic-report", "contract_rejected"),
        )
        self.assertTrue(failure["durable_receipt_ref"].startswith("post-writeback-hook:pwh_"))
        statuses = {r["hook_id"]: r["status"] for r in self.receipts()}
        self.assertEqual(
            statuses, {"periodic_report.oversized_transport": "retryable_failure", HOOK: "intent_recorded"}
        )

    def test_post_writeback_python_transport_does_not_own_ts_result_budget(self):
        """Follows test_post_writeback_python_transport_does_not_own_ts_result_budget:
        17,000 floats are over 65,536 bytes as Python writes them (1.0) and
        under it as JSON.stringify does (1); the budget is JavaScript's."""
        hook = registration("periodic_report.float_lexemes", max_result_bytes=65536)
        payload = {"values": [1.0] * 17_000}
        self.assertGreater(len(json.dumps(payload)), 65536)
        produce = producer("periodic_report.float_lexemes", "periodic-report:float-lexemes", payload)
        dispatch = self.host.dispatch([(hook, produce)], hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual((dispatch["invoked_count"], dispatch["intent_count"], dispatch["failures"]), (1, 1, []))

    def test_post_writeback_dispatch_rejects_non_durable_input_before_provider(self):
        """Follows test_post_writeback_dispatch_rejects_non_durable_input_before_provider."""
        calls: List[str] = []
        pending = hook_input()
        pending["receipt"]["durable"] = False
        dispatch = self.host.dispatch([(registration(), producer(calls=calls))], hook_input=pending)
        self.assertEqual(calls, [])
        self.assertEqual(dispatch["intent_count"], 0)
        self.assertEqual(dispatch["failures"][0]["error_code"], "registration_or_input_rejected")

    def test_post_writeback_legacy_input_is_exact_and_preserves_event_id(self):
        """Follows test_post_writeback_legacy_input_is_exact_and_preserves_event_id."""
        first = self.host.dispatch([(registration(), producer())], hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual(first["intents"][0]["source_receipt_id"], "evt-stage-1")
        self.assertEqual([r["source_receipt_id"] for r in self.receipts()], ["evt-stage-1"])

        rejected = self.host.dispatch([(registration(), producer())], hook_input={**hook_input(), "unexpected": True})
        self.assertEqual(rejected["invoked_count"], 0)
        self.assertEqual(rejected["failures"][0]["error_code"], "registration_or_input_rejected")

    def test_periodic_report_hook_accepts_durable_todo_completion(self):
        """Follows test_periodic_report_hook_accepts_durable_todo_completion:
        a committed todo_complete event reaches a periodic-report producer
        (a LoopX-shaped one; LoopX's own is its module) registered for it."""
        done = hook_input()
        done["receipt"].update(event_kind="todo_complete", status="committed")
        hook = registration(event_kinds=["refresh_state", "todo_complete"])
        dispatch = self.host.dispatch([(hook, PeriodicReportProducer())], hook_input=done)
        self.assertEqual((dispatch["intent_count"], dispatch["failures"]), (1, []))

    def test_post_writeback_sidecar_replay_skips_provider(self):
        """Follows test_post_writeback_sidecar_replay_skips_provider."""
        calls: List[str] = []
        hooks = [(registration(), producer(calls=calls))]
        first = self.host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        replay = self.host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual(len(calls), 1)
        self.assertEqual((first["intent_count"], replay["intent_count"], replay["invoked_count"]), (1, 1, 0))
        self.assertEqual(replay["replayed_hooks"], [HOOK])
        self.assertEqual(replay["intents"], first["intents"])

    def test_post_writeback_batches_runtime_calls_for_fresh_and_replay(self):
        """Follows test_post_writeback_batches_runtime_calls_for_fresh_and_replay:
        a fresh batch is one preflight and one finalize, its replay one preflight."""
        second = "periodic_report.second"
        hooks = [
            (registration(), producer()),
            (registration(second), producer(second, "periodic-report:second", {"stage_identity": "stage-456"})),
        ]
        first = self.host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual(first["intent_count"], 2)
        self.assertEqual(self.host.phases, ["preflight", "finalize"])

        self.host.phases.clear()
        replay = self.host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual(replay["replayed_hooks"], [second, HOOK])
        self.assertEqual(self.host.phases, ["preflight"])

    def test_post_writeback_retryable_failure_recovers_after_restart(self):
        """Follows test_post_writeback_retryable_failure_recovers_after_restart:
        the retry runs in a new serve process (a new Adapter), from the sidecar alone."""
        calls: List[str] = []
        succeed = producer(calls=calls)

        def flaky(value: Dict[str, Any]) -> Any:
            if not calls:
                calls.append("transient")
                raise RuntimeError("transient")
            return succeed(value)

        hooks = [(registration(), flaky)]
        first = self.host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual((first["intent_count"], first["failures"][0]["error_code"]), (0, "producer_failed"))
        self.assertTrue(first["failures"][0]["durable_receipt_ref"].startswith("post-writeback-hook:pwh_"))
        [failed] = self.receipts()
        self.assertEqual((failed["status"], failed["attempt_count"]), ("retryable_failure", 1))
        self.assertEqual(self.host.phases, ["preflight", "finalize"])

        self.adapter.close()
        self.adapter = Adapter(timeout=60)
        host = Host(self.adapter)
        recovered = host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual(host.phases, ["preflight", "finalize"])
        host.phases.clear()
        replay = host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        self.assertEqual(host.phases, ["preflight"])

        self.assertEqual(len(calls), 2)
        self.assertEqual((recovered["intent_count"], replay["intent_count"]), (1, 1))
        self.assertEqual((recovered["retried_hooks"], replay["replayed_hooks"]), ([HOOK], [HOOK]))
        [receipt] = self.receipts()
        self.assertEqual((receipt["status"], receipt["attempt_count"]), ("intent_recorded", 2))

    def test_post_writeback_policy_version_rotates_replay_identity(self):
        """Follows test_post_writeback_policy_version_rotates_replay_identity."""
        calls: List[str] = []
        for policy_version in ("v0", "v1"):
            hooks = [(registration(policy_version=policy_version), producer(calls=calls))]
            dispatch = self.host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
            self.assertEqual(dispatch["invoked_count"], 1)
        self.assertEqual(len(calls), 2)
        self.assertEqual(len(self.receipts()), 2)

    def test_post_writeback_ts_cas_lock_timeout_preserves_free_sibling_result(self):
        """Follows test_post_writeback_ts_cas_lock_timeout_preserves_free_sibling_result:
        a live owner's `.ts-effect.lock` on one receipt costs that hook
        `journal_write_failed` within the lock budget; its sibling records."""
        calls: List[str] = []
        locked, free = "periodic_report.a_locked", "periodic_report.b_free"
        hooks = [
            (registration(locked), producer(locked, "periodic-report:locked-a", {"stage_identity": "a"}, calls)),
            (registration(free), producer(free, "periodic-report:free-b", {"stage_identity": "b"}, calls)),
        ]
        preflight = self.adapter.post_writeback_transaction(
            {
                "schema_version": REQUEST,
                "phase": "preflight",
                "runtime_root": self.root,
                "source": None,
                "hook_input": hook_input(),
                "registrations": [reg for reg, _ in hooks],
                "transaction_id": None,
                "provider_outcomes": [],
            }
        )
        [plan] = [p for p in preflight["provider_plan"] if p["hook_id"] == locked]
        self.folder().mkdir(parents=True)
        lock = self.folder() / f"{plan['dispatch_id']}.json.ts-effect.lock"
        lock.write_text(json.dumps({"pid": os.getpid(), "token": "python-live-owner"}), "utf-8")

        started = time.monotonic()
        try:
            dispatch = self.host.dispatch(hooks, hook_input=hook_input(), runtime_root=self.root)
        finally:
            lock.unlink()
        self.assertLess(time.monotonic() - started, 4.0)
        self.assertEqual(sorted(calls), [locked, free])
        self.assertEqual((dispatch["invoked_count"], dispatch["intent_count"]), (2, 1))
        self.assertEqual(dispatch["intents"][0]["idempotency_key"], "periodic-report:free-b")
        self.assertEqual(
            dispatch["failures"],
            [{"hook_id": locked, "capability_id": "periodic-report", "error_code": "journal_write_failed"}],
        )
        self.assertEqual([r["hook_id"] for r in self.receipts()], [free])


class LoopxRegistryScenarios(unittest.TestCase):
    """The scenarios about producers themselves: registered with, and
    dispatched by, the adapter's shipped registry, whose producers' results
    cross to the engine through the adapter."""

    def setUp(self) -> None:
        self.tmp = TempDir()
        self.adapter = Adapter(timeout=60)
        self.registry = HookRegistry(self.adapter, dialect=SHIPPED)

    def tearDown(self) -> None:
        self.adapter.close()
        self.tmp.remove()

    def dispatch(self, doc: Dict[str, Any]) -> Dict[str, Any]:
        return self.registry.dispatch(doc, journal=self.tmp.db("hooks"), profile=ENABLED)

    def test_zero_registrations_never_reaches_the_runtime(self):
        """Follows test_zero_registrations_never_reaches_the_runtime: with no
        hook registered, even a refused source dispatches vacuously."""
        dispatch = self.dispatch(mutated_source("agent_id"))
        self.assertEqual((dispatch["failures"], dispatch["invoked_count"], dispatch["intent_count"]), ([], 0, 0))
        self.assertIs(dispatch["primary_writeback_preserved"], True)

    def test_post_writeback_dispatch_isolates_non_json_provider_results(self):
        """Follows test_post_writeback_dispatch_isolates_non_json_provider_results.
        The journal keeps the failed attempt, so the failure also carries its
        receipt's reference."""
        invalid = "periodic_report.invalid_transport"
        self.registry.register(registration(invalid), lambda _: {"opaque": object()})
        self.registry.register(registration(), producer())
        dispatch = self.dispatch(source())
        self.assertEqual(dispatch["intent_count"], 1)
        self.assertEqual(
            [{k: f[k] for k in ("hook_id", "capability_id", "error_code")} for f in dispatch["failures"]],
            [{"hook_id": invalid, "capability_id": "periodic-report", "error_code": "contract_rejected"}],
        )

    def test_post_writeback_dispatch_isolates_recursive_provider_transport(self):
        """Follows test_post_writeback_dispatch_isolates_recursive_provider_transport:
        a result nested 1,100 levels deep (past what Python's json writes) is `contract_rejected`."""

        def recursive(_: Dict[str, Any]) -> Dict[str, Any]:
            root: Dict[str, Any] = {}
            cursor = root
            for _level in range(1_100):
                cursor["child"] = {}
                cursor = cursor["child"]
            return root

        self.registry.register(registration("periodic_report.recursive_transport"), recursive)
        self.registry.register(registration(), producer())
        dispatch = self.dispatch(source())
        self.assertEqual((dispatch["invoked_count"], dispatch["intent_count"], len(dispatch["failures"])), (2, 1, 1))
        self.assertEqual(dispatch["failures"][0]["hook_id"], "periodic_report.recursive_transport")
        self.assertEqual(dispatch["failures"][0]["error_code"], "contract_rejected")


if __name__ == "__main__":
    unittest.main()

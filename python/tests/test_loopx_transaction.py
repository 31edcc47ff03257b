"""LoopX's own Python flow, end to end, against the package: LoopX-shaped
writebacks (a `refresh_state` replan with `todo_id: null`, then a
`todo_complete`) sent as LoopX's composition roots send them, the
two-phase `capability_hook.post_writeback.transaction` over one serve
process, with LoopX's periodic-report producer called in between. It ends
in the `intent_recorded` sidecars that LoopX's periodic-report consumer
scans its folder for, and a replay calls no producer."""

import copy
import json
import os
import unittest
from pathlib import Path
from typing import Any, Dict, List

from dispatch_support import TempDir
from periodic_report_producer import HOOK_ID, PeriodicReportProducer
from support import ROOT

from loopx_hooks import Adapter, LoopxHooksError

DOCS = json.loads((ROOT / "__test__" / "support" / "shipped_documents.json").read_text("utf-8"))
REQUEST = "loopx_post_writeback_hook_transaction_request_v0"
GOAL = "goal-1"


def writeback(event_kind: str, todo_id: Any, stage: str, effect: str) -> Dict[str, Any]:
    source = copy.deepcopy(DOCS["source"])
    source["event_kind"] = event_kind
    source["identity"].update({"goal_id": GOAL, "agent_id": "agent-1", "todo_id": todo_id, "effect_id": effect})
    source["projection"] = {
        "stage_completion": {"schema_version": "periodic_report_stage_completion_receipt_v0", "stage_identity": stage},
        "last_report": {"report_id": "report-7"},
    }
    return source


def request(root: str, source: Dict[str, Any], **fields: Any) -> Dict[str, Any]:
    base = {
        "schema_version": REQUEST,
        "phase": "preflight",
        "runtime_root": root,
        "source": source,
        "hook_input": None,
        "registrations": [DOCS["registration"]],
        "transaction_id": None,
        "provider_outcomes": [],
    }
    return {**base, **fields}


def run(adapter: Adapter, root: str, source: Dict[str, Any], producers: Dict[str, Any]) -> Dict[str, Any]:
    """What a LoopX composition root does: preflight, call each planned
    producer with its hook input, finalize with the outcomes."""
    preflight = adapter.post_writeback_transaction(request(root, source))
    if not preflight["provider_plan"]:
        return preflight["dispatch"]
    outcomes: List[Dict[str, Any]] = []
    for plan in preflight["provider_plan"]:
        outcome = {k: plan[k] for k in ("dispatch_id", "hook_id", "capability_id", "attempt_count")}
        try:
            outcome.update(status="returned", result=producers[plan["hook_id"]](plan["hook_input"]))
        except Exception:
            outcome.update(status="producer_failed", result=None)
        outcomes.append(outcome)
    final = adapter.post_writeback_transaction(
        request(root, source, phase="finalize", transaction_id=preflight["transaction_id"], provider_outcomes=outcomes)
    )
    return final["dispatch"]


def consumer_scan(root: str) -> List[Dict[str, Any]]:
    """The intents LoopX's periodic-report consumer finds: every
    `intent_recorded` receipt of the goal's sidecar folder."""
    folder = Path(root) / "goals" / GOAL / "post_writeback_hooks"
    found = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("pwh_") and name.endswith(".json"):
            receipt = json.loads((folder / name).read_text("utf-8"))
            if receipt["status"] == "intent_recorded":
                found.append(receipt["intent"])
    return found


class LoopxPythonFlowEndToEnd(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = TempDir()
        self.root = self.tmp.path
        self.adapter = Adapter(timeout=30)

    def tearDown(self) -> None:
        self.adapter.close()
        self.tmp.remove()

    def test_a_replan_and_a_todo_complete_end_in_the_sidecars_the_consumer_scans(self):
        producer = PeriodicReportProducer()
        replan = writeback("refresh_state", None, "stage-1", "effect-replan")
        done = writeback("todo_complete", "todo-7", "stage-2", "effect-done")

        first = run(self.adapter, self.root, replan, {HOOK_ID: producer})
        second = run(self.adapter, self.root, done, {HOOK_ID: producer})
        self.assertEqual((first["invoked_count"], first["intent_count"], first["failures"]), (1, 1, []))
        self.assertEqual((second["invoked_count"], second["intent_count"], second["failures"]), (1, 1, []))
        self.assertEqual(producer.calls, 2)

        intents = consumer_scan(self.root)
        self.assertEqual(
            sorted(i["idempotency_key"] for i in intents), ["periodic-report:stage-1", "periodic-report:stage-2"]
        )
        self.assertTrue(all(i["intent_kind"] == "periodic_report.trigger_evaluation" for i in intents))
        self.assertTrue(all(i["payload"]["generation_authorized"] is False for i in intents))
        self.assertEqual(
            sorted(i["source_receipt_id"] for i in intents),
            sorted(d["intents"][0]["source_receipt_id"] for d in (first, second)),
        )

        replay = run(self.adapter, self.root, replan, {HOOK_ID: producer})
        self.assertEqual(producer.calls, 2, "a replay calls no producer")
        self.assertEqual((replay["replayed_hooks"], replay["intents"]), ([HOOK_ID], first["intents"]))

    def test_a_raising_producer_is_retried_at_the_next_attempt(self):
        source = writeback("refresh_state", None, "stage-3", "effect-retry")

        def broken(_: Any) -> Any:
            raise RuntimeError("a secret the host must not see")

        failed = run(self.adapter, self.root, source, {HOOK_ID: broken})
        self.assertEqual([f["error_code"] for f in failed["failures"]], ["producer_failed"])
        self.assertEqual(consumer_scan(self.root), [])
        for name in os.listdir(Path(self.root) / "goals" / GOAL / "post_writeback_hooks"):
            self.assertNotIn("secret", (Path(self.root) / "goals" / GOAL / "post_writeback_hooks" / name).read_text())

        producer = PeriodicReportProducer()
        retried = run(self.adapter, self.root, source, {HOOK_ID: producer})
        self.assertEqual((retried["retried_hooks"], retried["intent_count"]), ([HOOK_ID], 1))

    def test_a_request_that_breaks_the_protocol_raises_with_loopxs_message(self):
        bad = request(self.root, writeback("refresh_state", None, "stage-4", "effect-bad"), unexpected=True)
        with self.assertRaises(LoopxHooksError) as raised:
            self.adapter.post_writeback_transaction(bad)
        self.assertEqual(raised.exception.code, "ERR_LOOPX_TRANSACTION_INVALID")
        self.assertIn("request fields are invalid", str(raised.exception))


if __name__ == "__main__":
    unittest.main()

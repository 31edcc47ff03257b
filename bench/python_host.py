"""The Python side of the bench's Python row (bench/python.ts): one host
process dispatching committed writebacks one after another through
HookRegistry.dispatch, with the same registration, intent kind, requests
and producer as the Node side (bench/fixtures.ts). Prints one JSON line:
{"ms": elapsed, "n": dispatches, "outcome": what every hook answered}.

Usage: python_host.py DB TAG N (dispatches requests TAG_0..TAG_N-1, after
20 warm-up dispatches of their own)."""

import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from loopx_hooks import Adapter, HookRegistry  # noqa: E402

EXAMPLES = ROOT / "examples"


def example(name):
    return json.loads((EXAMPLES / f"{name}.json").read_text("utf-8"))


def request(tag, i):
    n = f"{tag}_{i}"
    return {
        "settlement": {
            "goal_id": "goal_" + tag,
            "agent_id": "agent_bench",
            "todo_id": "todo_" + n,
            "turn_instance_id": "turn_" + n,
            "effect_id": "effect_" + n,
        },
        "receipt": {
            "receipt_id": "receipt_" + n,
            "effect_id": "effect_" + n,
            "step_kind": "durable_writeback",
            "status": "committed",
            "checkpointed": True,
            "state_revision": "revision_" + n,
            "committed_at": "2026-08-26T00:00:00Z",
        },
        "event": {"event_kind": "todo_completed", "fact_refs": ["fact_" + n]},
    }


def jcs(value):
    # The payloads here are ASCII strings and arrays: sorted keys, no spaces is their canonical form.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def producer(value):
    """bench/fixtures.ts `provider`: one trigger_evaluation intent, its id computed here."""
    payload = {"segment_ref": "segment_" + value["source"]["todo_id"], "source_event_refs": [value["source"]["receipt_id"]]}
    intent_id = "pwi_" + hashlib.sha256(
        jcs(
            {
                "domain": "loopx_post_writeback_intent_v0",
                "dispatch_id": value["dispatch_id"],
                "intent_kind": "periodic_report.trigger_evaluation",
                "policy_version": "weekly_v0",
                "payload": payload,
            }
        ).encode("utf-8")
    ).hexdigest()
    return {
        "schema_version": "loopx_post_writeback_hook_result_v0",
        "status": "proposed",
        "intents": [
            {
                "schema_version": "loopx_post_writeback_intent_v0",
                "intent_id": intent_id,
                "hook_id": value["hook_id"],
                "capability_id": value["capability_id"],
                "source_dispatch_id": value["dispatch_id"],
                "intent_kind": "periodic_report.trigger_evaluation",
                "operation": "evaluate_runtime_trigger",
                "policy_version": "weekly_v0",
                "payload": payload,
                "budget": {"max_attempts": 1, "max_result_bytes": 16384},
                "requested_write_scope": [],
                "failure_policy": "isolate",
                "grants_new_action_authority": False,
                "external_write_performed": False,
            }
        ],
    }


def main():
    db, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Adapter(timeout=60) as adapter:
        registry = HookRegistry(adapter, [example("intent_kind")])
        registry.register(example("registration"), producer)
        profile = {"enabled": True}
        for i in range(20):
            registry.dispatch(request("warm_" + tag, i), journal=db, profile=profile)
        outcomes = set()
        started = time.perf_counter()
        for i in range(n):
            outcome = registry.dispatch(request(tag, i), journal=db, profile=profile)
            outcomes.update(h["outcome"] for h in outcome["hooks"])
        ms = (time.perf_counter() - started) * 1000
    print(json.dumps({"ms": ms, "n": n, "outcome": sorted(outcomes)}))


if __name__ == "__main__":
    main()

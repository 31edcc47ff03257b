"""A producer shaped like LoopX's periodic-report capability producer (the
shipped dialect): a synchronous callable that reads the stage-completion
receipt from its input's projection and proposes one trigger-evaluation
intent keyed by the stage, or is not applicable when no stage completed.
It authorizes nothing (no report generation, no delivery) and writes
nothing outside itself."""

from typing import Any, Dict

HOOK_ID = "periodic_report.stage_completion"
CAPABILITY_ID = "periodic-report"


class PeriodicReportProducer:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, hook_input: Dict[str, Any]) -> Dict[str, Any]:
        self.calls += 1
        result: Dict[str, Any] = {
            "schema_version": "loopx_post_writeback_capability_hook_result_v0",
            "hook_id": HOOK_ID,
            "capability_id": CAPABILITY_ID,
            "phase": "post_writeback",
        }
        stage = (hook_input.get("projection") or {}).get("stage_completion")
        if not isinstance(stage, dict) or not stage.get("stage_identity"):
            return {**result, "status": "not_applicable", "intent": None}
        identity = stage["stage_identity"]
        return {
            **result,
            "status": "intent",
            "intent": {
                "schema_version": "loopx_capability_intent_v0",
                "intent_kind": "periodic_report.trigger_evaluation",
                "idempotency_key": f"periodic-report:{identity}",
                "source_receipt_id": hook_input["receipt"]["event_id"],
                "payload": {
                    "schema_version": "periodic_report_trigger_evaluation_intent_v0",
                    "stage_completion": {"stage_identity": identity},
                    "generation_authorized": False,
                    "external_delivery_authorized": False,
                },
                "requested_write_scope": [],
            },
        }

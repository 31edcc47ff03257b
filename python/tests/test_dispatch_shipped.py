"""One shipped-dialect dispatch from Python: LoopX's periodic-report
registration with a LoopX-shaped Python producer, dispatched from a
committed writeback's source through the engine, returns the shipped
dispatch result LoopX documents, and a replay answers from the journal
without calling the producer."""

import copy
import json
import unittest

from dispatch_support import ENABLED, TempDir, journal_rows
from periodic_report_producer import HOOK_ID, PeriodicReportProducer
from support import ROOT

from loopx_hooks import SHIPPED, Adapter, HookRegistry

DOCS = json.loads((ROOT / "__test__" / "support" / "shipped_documents.json").read_text("utf-8"))


class AShippedDispatchFromPython(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = TempDir()
        self.adapter = Adapter(timeout=30)

    def tearDown(self) -> None:
        self.adapter.close()
        self.tmp.remove()

    def test_the_periodic_report_producer_gets_the_documented_result_and_a_replay_does_not_call_it(self):
        registry = HookRegistry(self.adapter, dialect=SHIPPED)
        producer = PeriodicReportProducer()
        self.assertTrue(registry.register(DOCS["registration"], producer).ok)
        db = self.tmp.db("shipped")
        result = registry.dispatch(DOCS["source"], journal=db, profile=ENABLED)
        self.assertEqual(result, DOCS["dispatch_result"])
        self.assertEqual(producer.calls, 1)
        self.assertTrue(self.adapter.validate_shipped_dispatch_result(result).ok)

        again = registry.dispatch(DOCS["source"], journal=db, profile=ENABLED)
        self.assertEqual(producer.calls, 1)
        self.assertEqual(again["replayed_hooks"], [HOOK_ID])
        self.assertEqual(again["intents"], result["intents"])
        rows = journal_rows(db)
        self.assertEqual([(r["hookId"], r["state"], r["dialect"]) for r in rows], [(HOOK_ID, "proposed", SHIPPED)])

    def test_a_source_without_a_completed_stage_is_not_applicable(self):
        registry = HookRegistry(self.adapter, dialect=SHIPPED)
        producer = PeriodicReportProducer()
        registry.register(DOCS["registration"], producer)
        source = copy.deepcopy(DOCS["source"])
        source["projection"] = {"last_report": {"report_id": "report-7"}}
        source["identity"]["effect_id"] = "effect-2"
        result = registry.dispatch(source, journal=self.tmp.db("na"), profile=ENABLED)
        self.assertEqual((result["invoked_count"], result["intent_count"], result["failures"]), (1, 0, []))
        self.assertEqual(producer.calls, 1)


if __name__ == "__main__":
    unittest.main()

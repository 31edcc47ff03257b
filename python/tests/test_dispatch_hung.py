"""A producer that never returns does not stall the Python host: each
producer runs on a thread of its own, the dispatch stops waiting for it at
the limit the engine gives and reports it timed out, the later hooks run,
and its late answer is dropped. A hook with a cap's worth of such calls
still running is quarantined: its calls time out without a thread. Both
dialects; real serve processes and journal files."""

import contextvars
import copy
import json
import threading
import unittest

from dispatch_support import (
    ENABLED,
    Counted,
    Hangs,
    TempDir,
    journal_rows,
    new_registry,
    not_applicable,
    registration,
    request,
    returns_within,
    trigger_evaluation,
)
from periodic_report_producer import HOOK_ID, PeriodicReportProducer
from support import ROOT

from loopx_hooks import ABANDONED_PER_HOOK, SHIPPED, Adapter, HookRegistry

DOCS = json.loads((ROOT / "__test__" / "support" / "shipped_documents.json").read_text("utf-8"))

# Far past any limit in these tests: a dispatch not back by then hangs.
HANG = 20


class AProducerThatNeverReturns(unittest.TestCase):
    def setUp(self) -> None:
        self.adapter = Adapter(timeout=30)
        self.tmp = TempDir()
        self.hung = Hangs()

    def tearDown(self) -> None:
        self.hung.end()
        self.adapter.close()
        self.tmp.remove()

    def test_the_dispatch_comes_back_at_the_hooks_timeout_and_the_later_hook_runs(self):
        registry = new_registry(self.adapter)
        registry.register(registration("periodic_report.a_hangs", timeout_ms=300), self.hung)
        after = Counted(trigger_evaluation(self.adapter))
        registry.register(registration("periodic_report.b_after"), after)
        db = self.tmp.db("hung")
        outcome = returns_within(HANG, lambda: registry.dispatch(request("h"), journal=db, profile=ENABLED))
        self.assertEqual(
            [(h["hookId"], h["outcome"], h["attempt"], h["failureCode"]) for h in outcome["hooks"]],
            [
                ("periodic_report.a_hangs", "failed", 1, "producer_timed_out"),
                ("periodic_report.b_after", "recorded", 1, None),
            ],
        )
        self.assertEqual((self.hung.calls, after.calls), (1, 1))
        rows = journal_rows(db)
        self.assertEqual([(r["hookId"], r["state"]) for r in rows], [("periodic_report.a_hangs", "failed"), ("periodic_report.b_after", "proposed")])
        # Its answer, once it comes, is dropped: the journal keeps the timeout.
        self.hung.end()
        self.assertEqual(journal_rows(db), rows)

    def test_in_the_shipped_dialect_the_dispatch_comes_back_at_its_wall_and_recover_runs_the_later_hook(self):
        # The shipped contract has no per-hook timeout: the limit is the
        # dispatch's wall budget, and once it is spent the engine starts no
        # later hook in that dispatch; it stays owed for recover().
        registry = HookRegistry(self.adapter, dialect=SHIPPED)
        hung = copy.deepcopy(DOCS["registration"])
        hung["hook_id"] = "periodic_report.a_hangs"
        registry.register(hung, self.hung)
        after = PeriodicReportProducer()
        registry.register(DOCS["registration"], after)
        db = self.tmp.db("hung_shipped")
        profile = {"enabled": True, "maxDispatchWallMs": 300}
        result = returns_within(HANG, lambda: registry.dispatch(DOCS["source"], journal=db, profile=profile))
        self.assertEqual(
            [(f["hook_id"], f["error_code"]) for f in result["failures"]],
            [("periodic_report.a_hangs", "producer_failed"), (HOOK_ID, "dispatch_failed")],
        )
        self.assertEqual((result["invoked_count"], result["intents"]), (1, []))
        self.assertEqual((self.hung.calls, after.calls), (1, 0))

        report = returns_within(HANG, lambda: registry.recover(journal=db, profile=profile))
        self.assertEqual(
            [(h["hookId"], h["outcome"], h["failureCode"]) for h in report["outcomes"]],
            [("periodic_report.a_hangs", "failed", "producer_timed_out"), (HOOK_ID, "recorded", None)],
        )
        self.assertEqual((self.hung.calls, after.calls), (2, 1))
        again = registry.dispatch(DOCS["source"], journal=db, profile=profile)
        self.assertEqual(again["intents"], DOCS["dispatch_result"]["intents"])

    def test_a_hook_with_a_caps_worth_of_calls_still_running_is_quarantined_and_not_started(self):
        registry = new_registry(self.adapter)
        registry.register(registration("periodic_report.a_hangs", timeout_ms=100), self.hung)
        after = Counted(not_applicable)
        registry.register(registration("periodic_report.b_after"), after)
        db = self.tmp.db("quarantine")

        def dispatch(tag: str) -> list:
            outcome = returns_within(HANG, lambda: registry.dispatch(request(tag), journal=db, profile=ENABLED))
            return [(h["hookId"], h["outcome"], h["attempt"], h["failureCode"]) for h in outcome["hooks"]]

        timed_out = [
            ("periodic_report.a_hangs", "failed", 1, "producer_timed_out"),
            ("periodic_report.b_after", "not_applicable", 1, None),
        ]
        for n in range(ABANDONED_PER_HOOK):
            self.assertEqual(dispatch(f"q{n}"), timed_out)
        # The cap is reached: the next call is timed out without being started.
        self.assertEqual(dispatch("quarantined"), timed_out)
        self.assertEqual(after.calls, ABANDONED_PER_HOOK + 1)
        self.hung.end()
        self.assertEqual(self.hung.calls, ABANDONED_PER_HOOK)
        # Once those threads have ended, the hook is called again.
        self.assertEqual(
            dispatch("after_release"),
            [
                ("periodic_report.a_hangs", "not_applicable", 1, None),
                ("periodic_report.b_after", "not_applicable", 1, None),
            ],
        )
        self.assertEqual(self.hung.calls, ABANDONED_PER_HOOK + 1)

    def test_an_interrupt_raised_in_a_producer_ends_the_dispatch_as_it_did_in_process(self):
        raised = []

        def interrupted(value):
            if not raised:
                raised.append(True)
                raise KeyboardInterrupt
            return not_applicable(value)

        registry = new_registry(self.adapter)
        registry.register(registration("periodic_report.one"), interrupted)
        db = self.tmp.db("interrupted")
        with self.assertRaises(KeyboardInterrupt):
            registry.dispatch(request("k"), journal=db, profile=ENABLED)
        # The ticket was cancelled: the serve process takes the next dispatch.
        outcome = registry.dispatch(request("next"), journal=db, profile=ENABLED)
        self.assertEqual([h["outcome"] for h in outcome["hooks"]], ["not_applicable"])
        # The interrupted call's checkpoint stays, owed for recover().
        self.assertEqual(sorted((r["effectId"], r["state"]) for r in journal_rows(db)), [("effect_k", "checkpointed"), ("effect_next", "not_applicable")])

    def test_a_producer_runs_on_another_thread_with_the_callers_context_variables(self):
        tag: "contextvars.ContextVar[str]" = contextvars.ContextVar("tag")
        seen = []

        def reads(value):
            seen.append((tag.get("unset"), threading.current_thread() is threading.main_thread()))
            return not_applicable(value)

        registry = new_registry(self.adapter)
        registry.register(registration("periodic_report.one"), reads)
        tag.set("the caller's")
        registry.dispatch(request("ctx"), journal=self.tmp.db("context"), profile=ENABLED)
        self.assertEqual(seen, [("the caller's", False)])


if __name__ == "__main__":
    unittest.main()

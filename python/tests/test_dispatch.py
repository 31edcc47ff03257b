"""The RFC validation matrix rows driven from Python: the producers are
Python callables, the dispatch is the engine's (HookRegistry.dispatch over
serve's prepare and finish), and the outcomes, the journal and the failure
codes are the ones the Node.js runtime gives for the same rows."""

import json
import os
import time
import unittest
from pathlib import Path

from dispatch_support import (
    ENABLED,
    Counted,
    TempDir,
    journal_rows,
    new_registry,
    not_applicable,
    registration,
    request,
    trigger_evaluation,
)

from support import ROOT

from loopx_hooks import Adapter, LoopxHooksError, Violation


class TheMatrixFromPython(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.adapter = Adapter(timeout=30)
        cls.tmp = TempDir()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.adapter.close()
        cls.tmp.remove()

    def test_a_disabled_phase_refuses_without_calling_a_producer_or_writing_a_record(self):
        for name, profile in (("explicit", {"enabled": False}), ("default", None)):
            registry = new_registry(self.adapter)
            producer = Counted(trigger_evaluation(self.adapter))
            self.assertTrue(registry.register(registration("periodic_report.one"), producer).ok)
            db = self.tmp.db(f"disabled_{name}")
            for event_kind in ("todo_completed", "replan_recorded"):
                outcome = registry.dispatch(request("d", event_kind), journal=db, profile=profile)
                self.assertEqual(outcome, {"admitted": False, "refusal": "phase_disabled", "hooks": []})
            self.assertEqual(producer.calls, 0)
            self.assertEqual(journal_rows(db), [])

    def test_a_malformed_registration_is_never_installed_or_invoked(self):
        registry = new_registry(self.adapter)
        bad = registration("periodic_report.bad", timeout_ms=10_000_000)
        bad_producer = Counted(not_applicable)
        with self.assertRaises(LoopxHooksError) as rejected:
            registry.register(bad, bad_producer)
        self.assertEqual(rejected.exception.code, "ERR_LOOPX_REGISTRATION_REJECTED")
        self.assertIn("/budget/timeout_ms", [v.path for v in rejected.exception.violations or ()])
        good = Counted(not_applicable)
        self.assertTrue(registry.register(registration("periodic_report.good"), good).ok)
        outcome = registry.dispatch(request("m"), journal=self.tmp.db("malformed"), profile=ENABLED)
        self.assertEqual([(h["hookId"], h["outcome"]) for h in outcome["hooks"]], [("periodic_report.good", "not_applicable")])
        self.assertEqual((bad_producer.calls, good.calls), (0, 1))
        # The engine judges it too: serve's open refuses it with the library's code and violations.
        with Adapter(timeout=30) as fresh, self.assertRaises(LoopxHooksError) as refused:
            fresh.call("open", journal=self.tmp.db("malformed_open"), registrations=[json.dumps(bad)])
        self.assertEqual(refused.exception.code, "ERR_LOOPX_REGISTRATION_REJECTED")
        self.assertIn(Violation("/budget/timeout_ms", "out_of_range"), refused.exception.violations or ())

    def test_a_replay_answers_from_the_journal_without_calling_the_producer(self):
        db = self.tmp.db("replay")
        registry = new_registry(self.adapter)
        producer = Counted(trigger_evaluation(self.adapter))
        registry.register(registration("periodic_report.one"), producer)
        first = registry.dispatch(request("r"), journal=db, profile=ENABLED)
        self.assertEqual([h["outcome"] for h in first["hooks"]], ["recorded"])
        again = registry.dispatch(request("r"), journal=db, profile=ENABLED)
        self.assertEqual(producer.calls, 1)
        hook = again["hooks"][0]
        self.assertEqual((hook["outcome"], hook["attempt"], hook["receipt"]), ("replayed", 1, first["hooks"][0]["receipt"]))
        # A new host process with a producer that would answer otherwise: still a replay, still not called.
        with Adapter(timeout=30) as other:
            changed = Counted(trigger_evaluation(other, segment="changed"))
            registry = new_registry(other)
            registry.register(registration("periodic_report.one"), changed)
            replayed = registry.dispatch(request("r"), journal=db, profile=ENABLED)
        self.assertEqual(changed.calls, 0)
        self.assertEqual(replayed["hooks"][0]["receipt"], first["hooks"][0]["receipt"])
        self.assertEqual(len(journal_rows(db)), 1)

    def test_a_different_result_for_one_identity_is_a_conflict_in_verify_mode_and_the_original_is_kept(self):
        db = self.tmp.db("conflict")
        verify = {"enabled": True, "replay": "verify"}
        segment = ["first"]
        registry = new_registry(self.adapter)
        producer = Counted(lambda value: trigger_evaluation(self.adapter, segment[0])(value))
        registry.register(registration("periodic_report.one"), producer)
        original = registry.dispatch(request("c"), journal=db, profile=verify)["hooks"][0]
        self.assertEqual(original["outcome"], "recorded")
        rows = journal_rows(db)
        segment[0] = "second"
        conflict = registry.dispatch(request("c"), journal=db, profile=verify)["hooks"][0]
        self.assertEqual(producer.calls, 2)
        self.assertEqual((conflict["outcome"], conflict["failureCode"]), ("conflict", "intent_conflict"))
        self.assertEqual((conflict["dispatchId"], conflict["receipt"]), (original["dispatchId"], original["receipt"]))
        self.assertEqual(journal_rows(db), rows)
        segment[0] = "first"
        same = registry.dispatch(request("c"), journal=db, profile=verify)["hooks"][0]
        self.assertEqual((same["outcome"], same["failureCode"], same["receipt"]), ("replayed", None, original["receipt"]))

    def test_a_raising_a_slow_and_a_malformed_producer_are_each_isolated_and_nothing_of_theirs_crosses(self):
        class Exploded(Exception):
            pass

        def raises(_value):
            raise Exploded("secret text /etc/passwd ghp_0123456789abcdefghijklmnopqrstuvwxyzAB")

        def slow(value):
            time.sleep(0.2)  # past its 50 ms limit: the late result is not taken
            return not_applicable(value)

        def malformed(_value):
            return {"schema_version": "loopx_post_writeback_hook_result_v0", "status": "maybe", "intents": []}

        producers = {
            "periodic_report.a_raises": Counted(raises),
            "periodic_report.b_slow": Counted(slow),
            "periodic_report.c_malformed": Counted(malformed),
            "periodic_report.d_not_json": Counted(lambda _v: {"status": {1, 2}}),
            "periodic_report.e_good": Counted(trigger_evaluation(self.adapter)),
        }
        registry = new_registry(self.adapter)
        for hook_id, producer in producers.items():
            timeout = 50 if hook_id.endswith("slow") else None
            self.assertTrue(registry.register(registration(hook_id, timeout_ms=timeout), producer).ok)
        db = self.tmp.db("isolated")
        outcome = registry.dispatch(request("i"), journal=db, profile=ENABLED)
        self.assertEqual(
            [(h["hookId"], h["outcome"], h["attempt"], h["failureCode"], h["failureRule"]) for h in outcome["hooks"]],
            [
                ("periodic_report.a_raises", "failed", 1, "producer_failed", None),
                ("periodic_report.b_slow", "failed", 1, "producer_timed_out", None),
                ("periodic_report.c_malformed", "failed", 1, "result_contract_rejected", "not_allowed_value"),
                ("periodic_report.d_not_json", "failed", 1, "result_contract_rejected", "not_json_value"),
                ("periodic_report.e_good", "recorded", 1, None, None),
            ],
        )
        self.assertEqual([p.calls for p in producers.values()], [1] * 5)
        text = json.dumps([outcome, journal_rows(db)])
        for leaked in ("secret", "passwd", "ghp_", "Exploded", "maybe"):
            self.assertNotIn(leaked, text)

    def test_a_slow_producer_spends_the_dispatch_wall_and_later_hooks_are_not_started(self):
        def slow(value):
            time.sleep(0.3)  # past the 100 ms wall budget of the dispatch
            return not_applicable(value)

        after = Counted(not_applicable)
        registry = new_registry(self.adapter)
        registry.register(registration("periodic_report.a_slow", timeout_ms=5000, invocations=2), slow)
        registry.register(registration("periodic_report.b_after"), after)
        profile = {"enabled": True, "maxDispatchWallMs": 100}
        outcome = registry.dispatch(request("w"), journal=self.tmp.db("wall"), profile=profile)
        self.assertEqual(
            [(h["hookId"], h["outcome"], h["attempt"], h["failureCode"]) for h in outcome["hooks"]],
            [
                ("periodic_report.a_slow", "failed", 1, "dispatch_budget_exhausted"),
                ("periodic_report.b_after", "failed", 0, "dispatch_budget_exhausted"),
            ],
        )
        self.assertEqual(after.calls, 0)

    def test_several_hooks_run_in_hook_id_order_whatever_the_order_of_registration(self):
        order = []

        def producer(name):
            def produce(value):
                order.append(value["hook_id"])
                return not_applicable(value)

            return produce

        registry = new_registry(self.adapter)
        for hook_id in ("periodic_report.c", "periodic_report.a_z", "periodic_report.b", "periodic_report.a"):
            registry.register(registration(hook_id), producer(hook_id))
        outcome = registry.dispatch(request("o"), journal=self.tmp.db("order"), profile=ENABLED)
        expected = ["periodic_report.a", "periodic_report.a_z", "periodic_report.b", "periodic_report.c"]
        self.assertEqual(order, expected)
        self.assertEqual([h["hookId"] for h in outcome["hooks"]], expected)
        self.assertEqual(len({h["dispatchId"] for h in outcome["hooks"]}), 4)

    def test_a_producer_cannot_dispatch_from_inside_itself(self):
        registry = new_registry(self.adapter)
        inner = []

        def reenters(value):
            try:
                registry.dispatch(request("inner"), journal=self.tmp.db("reentrant"), profile=ENABLED)
            except LoopxHooksError as error:
                inner.append(error.code)
                raise
            return not_applicable(value)

        registry.register(registration("periodic_report.one"), reenters)
        outcome = registry.dispatch(request("outer"), journal=self.tmp.db("reentrant"), profile=ENABLED)
        self.assertEqual(inner, ["ERR_LOOPX_REENTRANT_DISPATCH"])
        self.assertEqual(outcome["hooks"][0]["failureCode"], "producer_failed")

    def test_a_relative_journal_path_is_the_callers_not_the_serve_processs(self):
        registry = new_registry(self.adapter)
        registry.register(registration("periodic_report.one"), not_applicable)
        here = Path(self.tmp.path) / "caller"
        here.mkdir()
        before = os.getcwd()
        os.chdir(here)
        self.addCleanup(os.chdir, before)
        for tag, journal, name in (
            ("str", "j.sqlite", "j.sqlite"),
            ("dict", {"path": "k.sqlite"}, "k.sqlite"),
            ("pathlike", Path("sub") / "l.sqlite", "sub/l.sqlite"),
        ):
            if tag == "pathlike":
                (here / "sub").mkdir()
            outcome = registry.dispatch(request(f"relative_{tag}"), journal=journal, profile=ENABLED)
            self.assertEqual([h["outcome"] for h in outcome["hooks"]], ["not_applicable"])
            self.assertTrue((here / name).is_file(), name)
            self.assertEqual(len(journal_rows(str(here / name))), 1)
            self.assertFalse((ROOT / name).exists(), name)

    def test_a_request_that_is_not_a_dispatch_request_is_the_librarys_coded_error(self):
        registry = new_registry(self.adapter)
        registry.register(registration("periodic_report.one"), not_applicable)
        with self.assertRaises(LoopxHooksError) as refused:
            registry.dispatch({"receipt": "nope"}, journal=self.tmp.db("bad_request"), profile=ENABLED)
        self.assertEqual(refused.exception.code, "ERR_LOOPX_INVALID_ARGUMENT")


if __name__ == "__main__":
    unittest.main()

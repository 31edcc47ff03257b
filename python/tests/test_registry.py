"""RFC section 11, slice 1: "add a Python callable adapter and deterministic
registry". Registrations are kept in byte order of hook_id whatever order
they come in, a second registration of one hook_id is refused, and each is
judged by the library through the adapter; a refused one raises, as the
Node.js runtime's register throws."""

import copy
import itertools
import json
import unittest

from support import KIND_TEXT, example

from loopx_hooks import SHIPPED, Adapter, HookRegistry, LoopxHooksError, Verdict, Violation


def registration(hook_suffix: str, event_kinds=("todo_completed",)) -> dict:
    doc = copy.deepcopy(example("registration"))
    doc["hook_id"] = f"periodic_report.{hook_suffix}"
    doc["event_kinds"] = list(event_kinds)
    return doc


class DeterministicRegistry(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.adapter = Adapter(timeout=30)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.adapter.close()

    def test_registrations_are_kept_in_hook_id_byte_order_whatever_the_order_of_registration(self):
        docs = [registration("b"), registration("a_z"), registration("a"), registration("a.b", ["replan_recorded"])]
        orders = set()
        for permutation in itertools.permutations(docs):
            registry = HookRegistry(self.adapter, [KIND_TEXT])
            for doc in permutation:
                self.assertTrue(registry.register(doc).ok)
            orders.add(registry.hook_ids)
        self.assertEqual(orders, {tuple(sorted((d["hook_id"] for d in docs), key=lambda h: h.encode()))})
        self.assertEqual(
            [h.hook_id for h in registry.subscribed("todo_completed")],
            ["periodic_report.a", "periodic_report.a_z", "periodic_report.b"],
        )

    def test_a_second_registration_of_one_hook_id_is_refused(self):
        registry = HookRegistry(self.adapter, [KIND_TEXT])
        first = registration("one")
        self.assertTrue(registry.register(first, provider=len).ok)
        changed = copy.deepcopy(first)
        changed["budget"]["timeout_ms"] = 50
        for again in (first, changed, json.dumps(first)):
            with self.assertRaises(LoopxHooksError) as refused:
                registry.register(again, provider=str)
            self.assertEqual(refused.exception.code, "ERR_LOOPX_REGISTRATION_REJECTED")
            self.assertEqual(refused.exception.violations, (Violation("/hook_id", "duplicate_item"),))
        self.assertEqual(len(registry), 1)
        self.assertIs(registry.get("periodic_report.one").provider, len)
        self.assertEqual(registry.get("periodic_report.one").registration, first)

    def test_each_registration_is_validated_through_the_adapter(self):
        registry = HookRegistry(self.adapter, [KIND_TEXT])
        bad = registration("bad")
        bad["failure_policy"] = "retry_forever"
        bad["api_key"] = "sk-live-secret"
        with self.assertRaises(LoopxHooksError) as rejected:
            registry.register(bad)
        verdict = self.adapter.validate_registration(bad, [KIND_TEXT])
        self.assertFalse(verdict.ok)
        self.assertEqual(rejected.exception.code, "ERR_LOOPX_REGISTRATION_REJECTED")
        self.assertEqual(rejected.exception.violations, verdict.violations)
        self.assertNotIn("sk-live-secret", str(rejected.exception))
        self.assertEqual(len(registry), 0)
        good = registration("good")
        self.assertEqual(registry.register(good), Verdict(True))
        self.assertEqual(registry.get("periodic_report.good").digest, self.adapter.registration_digest(good))

    def test_a_refused_shipped_registration_raises_too(self):
        registry = HookRegistry(self.adapter, dialect=SHIPPED)
        with self.assertRaises(LoopxHooksError) as rejected:
            registry.register({"schema_version": "loopx_post_writeback_capability_hook_registration_v0"}, provider=len)
        self.assertEqual(rejected.exception.code, "ERR_LOOPX_REGISTRATION_REJECTED")
        self.assertTrue(rejected.exception.violations)
        self.assertEqual(len(registry), 0)


if __name__ == "__main__":
    unittest.main()

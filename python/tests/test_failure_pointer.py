"""What a Python host sees of a rejected result: the outcome says which rule
and where (failurePointer), as the Node.js runtime's does, with a member name
that is not a plain short token redacted; and a ':memory:' journal is refused
by the library with a coded error, never made a file in the host's folder."""

import os
import tempfile
import unittest

from dispatch_support import ENABLED, TempDir, new_registry, registration, request, trigger_evaluation

from loopx_hooks import Adapter, LoopxHooksError


def bent(adapter: Adapter, change):
    produce = trigger_evaluation(adapter)

    def bent_producer(value: dict) -> dict:
        result = produce(value)
        change(result["intents"][0]["payload"])
        return result

    return bent_producer


class ARejectedResultSaysWhere(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.adapter = Adapter(timeout=30)
        cls.tmp = TempDir()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.adapter.close()
        cls.tmp.remove()

    def test_the_outcome_carries_the_pointer_and_redacts_private_names(self):
        cases = [
            ("wrong_type", lambda p: p.update(segment_ref=7), "/intents/0/payload/segment_ref"),
            ("unknown", lambda p: p.update(extra=1), "/intents/0/payload/extra"),
            ("credential", lambda p: p.update(sk_live_pyplanted0123456789=1), "/intents/0/payload/~0redacted~0"),
            ("address", lambda p: p.update({"jane.doe@example.com": 1}), "/intents/0/payload/~0redacted~0"),
        ]
        for name, change, pointer in cases:
            with self.subTest(name):
                registry = new_registry(self.adapter)
                registry.register(registration("periodic_report.bent"), bent(self.adapter, change))
                outcome = registry.dispatch(request(name), journal=self.tmp.db(name), profile=ENABLED)
                hook = outcome["hooks"][0]
                self.assertEqual(
                    (hook["outcome"], hook["failureCode"], hook["failurePointer"]),
                    ("failed", "result_contract_rejected", pointer),
                )
                self.assertIsNotNone(hook["failureRule"])


class NoMemoryJournal(unittest.TestCase):
    def test_memory_is_refused_and_no_file_appears(self):
        here = os.getcwd()
        folder = tempfile.mkdtemp(prefix="loopx-py-memory-")
        os.chdir(folder)
        try:
            with Adapter(timeout=30) as adapter:
                for journal in (":memory:", {"path": ":memory:"}):
                    registry = new_registry(adapter)
                    registry.register(registration("periodic_report.one"), trigger_evaluation(adapter))
                    with self.assertRaises(LoopxHooksError) as refused:
                        registry.dispatch(request("m"), journal=journal, profile=ENABLED)
                    self.assertEqual(refused.exception.code, "ERR_LOOPX_INVALID_ARGUMENT")
                    self.assertIn("not :memory:", str(refused.exception))
            self.assertEqual(os.listdir(folder), [])
        finally:
            os.chdir(here)
            os.rmdir(folder)


if __name__ == "__main__":
    unittest.main()

"""intent(): a provider's intent from its few values, built by the library's
own intent() (ids, fixed members and the contract's default budget), so a
Python provider writes what a TypeScript one does and never a second policy."""

import json
import unittest

from support import DISPATCH_ID, KIND_TEXT, REGISTRATION_TEXT, example, library_answers

import loopx_hooks
from loopx_hooks import Adapter, LoopxHooksError

INPUT = example("hook_input")
KIND = json.loads(KIND_TEXT)
PAYLOAD = {"segment_ref": "segment_opaque", "source_event_refs": ["event_opaque"]}


class IntentHelper(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.adapter = Adapter(timeout=30)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.adapter.close()

    def build(self, **more):
        return self.adapter.intent(
            INPUT, KIND, operation="evaluate_runtime_trigger", policy_version="weekly_v0", payload=PAYLOAD, **more
        )

    def test_the_example_intent_is_its_few_values(self):
        # The example result was written by hand to the contract: four values rebuild it.
        self.assertEqual(self.build(), example("hook_result")["intents"][0])

    def test_it_is_a_valid_result_and_its_id_is_the_librarys(self):
        built = self.build()
        result = {"schema_version": "loopx_post_writeback_hook_result_v0", "status": "proposed", "intents": [built]}
        verdict = self.adapter.validate_hook_result(result, REGISTRATION_TEXT, DISPATCH_ID, [KIND_TEXT])
        self.assertTrue(verdict.ok, verdict.violations)
        self.assertEqual(
            built["intent_id"],
            self.adapter.intent_id(
                dispatch_id=DISPATCH_ID, intent_kind=KIND["intent_kind"], policy_version="weekly_v0", payload=PAYLOAD
            ),
        )

    def test_it_matches_the_library_in_process_with_and_without_defaults(self):
        base = {
            "op": "intent",
            "input": json.dumps(INPUT),
            "intent_kind": KIND["intent_kind"],
            "operation": "evaluate_runtime_trigger",
            "policy_version": "weekly_v0",
            "payload": json.dumps(PAYLOAD),
        }
        given = {"budget": {"max_attempts": 2, "max_result_bytes": 512}, "requested_write_scope": ["reports"]}
        text = {k: json.dumps(v) for k, v in given.items()}
        expected = library_answers([base, {**base, **text}])
        self.assertEqual(self.build(), expected[0])
        built = self.build(**given)
        self.assertEqual(built, expected[1])
        self.assertEqual((built["budget"], built["requested_write_scope"]), (given["budget"], ["reports"]))
        # A kind's name does as well as its definition; the module function uses the shared adapter.
        self.assertEqual(self.adapter.intent(INPUT, KIND["intent_kind"], operation="evaluate_runtime_trigger",
                                             policy_version="weekly_v0", payload=PAYLOAD), expected[0])
        self.assertEqual(loopx_hooks.intent(INPUT, KIND, operation="evaluate_runtime_trigger",
                                            policy_version="weekly_v0", payload=PAYLOAD), expected[0])

    def test_bad_arguments_raise_coded_errors(self):
        with self.assertRaises(LoopxHooksError) as e:
            self.adapter.intent(INPUT, {"no": "name"}, operation="o", policy_version="v", payload={})
        self.assertEqual(e.exception.code, "ERR_LOOPX_INVALID_ARGUMENT")
        with self.assertRaises(LoopxHooksError) as e:
            self.adapter.intent({"not": "an input"}, KIND, operation="o", policy_version="v", payload={})
        self.assertEqual(e.exception.code, "ERR_LOOPX_INVALID_ARGUMENT")
        with self.assertRaises(LoopxHooksError) as e:
            self.adapter.intent(INPUT, KIND, operation="o", policy_version="v", payload={"x": float("nan")})
        self.assertEqual(e.exception.code, "ERR_LOOPX_NOT_JSON_VALUE")
        with self.assertRaises(LoopxHooksError):
            self.adapter.intent(INPUT, KIND, operation="o", policy_version="v", payload={}, requested_write_scope="a")


if __name__ == "__main__":
    unittest.main()

"""RFC section 4: "Python may hold a callable adapter and invoke the
TypeScript validators ...; it must not implement a second acceptance
policy." Every verdict and id the adapter gives is compared with the
library's own, computed in process by library_verdicts.js."""

import json
import unittest

from support import (
    DISPATCH_ID,
    EXAMPLE_CASES,
    FAILURE_RECEIPT,
    KIND_TEXT,
    REGISTRATION_TEXT,
    example,
    example_text,
    hostile_documents,
    library_answers,
)

from loopx_hooks import Adapter, LoopxHooksError, Verdict, Violation


def as_answer(verdict: Verdict) -> dict:
    return verdict.as_json()


class PythonHoldsACallableAdapter(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.adapter = Adapter(timeout=30)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.adapter.close()

    def judge_both(self, cases):
        """Each (contract, document text, context) judged by the adapter and by the library."""
        requests = [{"op": "validate", "contract": c, "document": d, **ctx} for c, d, ctx in cases]
        expected = library_answers(requests)
        got = [as_answer(self.adapter.validate(c, d, **ctx)) for c, d, ctx in cases]
        for (contract, document, _), mine, theirs in zip(cases, got, expected):
            self.assertEqual(mine, theirs, f"{contract}: {document[:120]}")
        return got

    def test_the_rfc_example_documents_get_the_librarys_verdicts(self):
        cases = [(c, example_text(name), ctx) for c, name, ctx in EXAMPLE_CASES]
        cases.append(("failure-receipt", json.dumps(FAILURE_RECEIPT), {}))
        got = self.judge_both(cases)
        # Every example is valid; the made-up failure receipt is not.
        self.assertTrue(all(v["ok"] for v in got[:-1]), got)
        self.assertFalse(got[-1]["ok"])

    def test_it_must_not_implement_a_second_acceptance_policy_hostile_documents_identical_verdicts(self):
        cases = []
        for contract, name, ctx in EXAMPLE_CASES:
            cases.extend((contract, text, ctx) for text in hostile_documents(example(name)))
        got = self.judge_both(cases)
        self.assertGreater(len(cases), 300)
        self.assertTrue(any(not v["ok"] for v in got))
        rules = {v["rule"] for answer in got if not answer["ok"] for v in answer["violations"]}
        # The sample reaches the rules that matter most at a trust boundary.
        for rule in ["unknown_field", "missing_field", "wrong_type", "not_json_value", "credential_like_value"]:
            self.assertIn(rule, rules)

    def test_python_values_and_json_text_get_one_verdict(self):
        registration = example("registration")
        kinds = [json.loads(KIND_TEXT)]
        as_value = self.adapter.validate_registration(registration, kinds)
        as_text = self.adapter.validate_registration(REGISTRATION_TEXT, [KIND_TEXT])
        as_bytes = self.adapter.validate_registration(REGISTRATION_TEXT.encode("utf-8"), kinds)
        self.assertEqual(as_value, as_text)
        self.assertEqual(as_value, as_bytes)
        self.assertTrue(as_value.ok)
        self.assertEqual(as_value.value, registration)
        registration["budget"]["timeout_ms"] = 0
        bad = self.adapter.validate_registration(registration, kinds)
        self.assertEqual(bad, Verdict(False, (Violation("/budget/timeout_ms", "out_of_range"),)))

    def test_every_exported_validator_answers_its_contract(self):
        a = self.adapter
        reg = example("registration")
        self.assertTrue(a.validate_hook_input(example("hook_input"), reg).ok)
        self.assertTrue(a.validate_hook_result(example("hook_result"), reg, DISPATCH_ID, [KIND_TEXT]).ok)
        self.assertTrue(a.validate_intent_kind_definition(example("intent_kind")).ok)
        self.assertTrue(a.validate_dispatch_receipt(example("dispatch_receipt")).ok)
        self.assertFalse(a.validate_failure_receipt({}).ok)
        self.assertTrue(a.validate_turn_start_registration(example("turn_start_registration")).ok)
        self.assertTrue(a.validate_turn_start_receipt(example("turn_start_receipt")).ok)

    def test_values_json_cannot_hold_are_not_json_value_at_their_path(self):
        verdict = self.adapter.validate_intent_kind_definition({"a": [1, float("nan")], "b": {1: 2}, "c": {1, 2}})
        self.assertEqual(
            verdict.violations,
            (Violation("/a/1", "not_json_value"), Violation("/b", "not_json_value"), Violation("/c", "not_json_value")),
        )
        self.assertEqual(self.adapter.validate_hook_input(b"\xff\xfe", REGISTRATION_TEXT).violations[0].rule, "not_json_value")

    def test_ids_and_canonical_json_are_the_librarys(self):
        reg = example("registration")
        receipt = example("dispatch_receipt")
        result = example("hook_result")
        intent = result["intents"][0]
        parts = {
            "receipt_id": receipt["receipt_id"],
            "effect_id": receipt["effect_id"],
            "hook_id": reg["hook_id"],
            "capability_id": reg["capability_id"],
            "registration_digest": receipt["registration_digest"],
            "registration_schema_version": reg["schema_version"],
            "event_kind": receipt["event_kind"],
        }
        values = [{"b": [1.0, -0.0, 1e21, "\u00e9\U0001f600"], "a": None}, "text", 10**15, [True, {"z": {}, "y": 2}]]
        requests = [
            {"op": "registration_digest", "registration": REGISTRATION_TEXT},
            {"op": "dispatch_id", "parts": parts},
            {
                "op": "intent_id",
                "dispatch_id": intent["source_dispatch_id"],
                "intent_kind": intent["intent_kind"],
                "policy_version": intent["policy_version"],
                "payload": json.dumps(intent["payload"]),
            },
        ] + [{"op": "canonical_json", "value": json.dumps(v)} for v in values]
        expected = library_answers(requests)
        got = [
            self.adapter.registration_digest(reg),
            self.adapter.dispatch_id(**parts),
            self.adapter.intent_id(
                dispatch_id=intent["source_dispatch_id"],
                intent_kind=intent["intent_kind"],
                policy_version=intent["policy_version"],
                payload=intent["payload"],
            ),
        ] + [self.adapter.canonical_json(v) for v in values]
        self.assertEqual(got, expected)
        # And they are the very ids the RFC examples carry.
        self.assertEqual(got[0], receipt["registration_digest"])
        self.assertEqual(got[1], receipt["dispatch_id"])
        self.assertEqual(got[2], intent["intent_id"])
        self.assertEqual(got[3], '{"a":null,"b":[1,0,1e+21,"\u00e9\U0001f600"]}')

    def test_misuse_of_the_context_is_a_coded_error_not_a_verdict(self):
        with self.assertRaises(LoopxHooksError) as raised:
            self.adapter.validate_registration(example("registration"), [{"intent_kind": "x"}])
        self.assertEqual(raised.exception.code, "ERR_LOOPX_INVALID_INTENT_KIND")
        self.assertIn(Violation("/0/capability_id", "missing_field"), raised.exception.violations)
        with self.assertRaises(LoopxHooksError) as raised:
            self.adapter.validate_hook_input(example("hook_input"), {"not": "a registration"})
        self.assertEqual(raised.exception.code, "ERR_LOOPX_INVALID_ARGUMENT")
        with self.assertRaises(LoopxHooksError) as raised:
            self.adapter.call("validate", contract="no-such-contract", document="{}")
        self.assertEqual(raised.exception.code, "ERR_LOOPX_SERVE_BAD_REQUEST")
        # The process still serves after each refusal.
        self.assertTrue(self.adapter.validate_intent_kind_definition(KIND_TEXT).ok)


if __name__ == "__main__":
    unittest.main()

"""The loopx-shipped-v0 dialect through the adapter: LoopX's own documents
(the periodic-report hook) get the library's verdicts, a broken one the
library's violations, and an unknown dialect the library's coded error."""

import copy
import json
import unittest

from support import ROOT, library_answers

from loopx_hooks import SHIPPED, Adapter, LoopxHooksError, Violation

DOCS = json.loads((ROOT / "__test__" / "support" / "shipped_documents.json").read_text("utf-8"))
REGISTRATION = json.dumps(DOCS["registration"])
CASES = [
    ("registration", "registration", {}),
    ("source", "source", {}),
    ("hook-input", "hook_input", {"registration": REGISTRATION}),
    ("hook-result", "hook_result", {"registration": REGISTRATION, "event_id": DOCS["event_id"]}),
    ("sidecar-receipt", "sidecar_receipt", {}),
    ("dispatch-result", "dispatch_result", {}),
]


class TheShippedDialect(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.adapter = Adapter(timeout=30)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.adapter.close()

    def test_loopx_documents_get_the_librarys_verdicts(self):
        broken = copy.deepcopy(DOCS["registration"])
        broken["requested_write_scope"] = ["owner_private_inbox"]
        cases = [(c, json.dumps(DOCS[name]), ctx) for c, name, ctx in CASES]
        cases.append(("registration", json.dumps(broken), {}))
        requests = [{"op": "validate", "contract": c, "document": d, "dialect": SHIPPED, **ctx} for c, d, ctx in cases]
        expected = library_answers(requests)
        got = [self.adapter.validate(c, d, dialect=SHIPPED, **ctx).as_json() for c, d, ctx in cases]
        self.assertEqual(got, expected)
        self.assertTrue(all(v["ok"] for v in got[:-1]), got)
        self.assertEqual(got[-1]["violations"], [{"path": "/requested_write_scope/0", "rule": "not_allowed_value"}])

    def test_the_named_functions_speak_the_shipped_dialect(self):
        a = self.adapter
        self.assertTrue(a.validate_shipped_registration(DOCS["registration"]).ok)
        self.assertTrue(a.validate_shipped_source(DOCS["source"]).ok)
        self.assertTrue(a.validate_shipped_hook_input(DOCS["hook_input"], DOCS["registration"]).ok)
        self.assertTrue(a.validate_shipped_result(DOCS["hook_result"], DOCS["registration"], DOCS["event_id"]).ok)
        self.assertTrue(a.validate_shipped_receipt(DOCS["sidecar_receipt"]).ok)
        self.assertTrue(a.validate_shipped_dispatch_result(DOCS["dispatch_result"]).ok)
        wrong = a.validate_shipped_result(DOCS["hook_result"], DOCS["registration"], "pwr_000000000000000000000000")
        self.assertEqual(wrong.violations, (Violation("/intent/source_receipt_id", "source_receipt_mismatch"),))
        # The same registration is refused by the default (RFC) dialect.
        self.assertFalse(a.validate("registration", DOCS["registration"], kinds=[]).ok)

    def test_an_unknown_dialect_is_a_coded_error(self):
        with self.assertRaises(LoopxHooksError) as raised:
            self.adapter.validate("registration", DOCS["registration"], dialect="loopx-shipped-v9")
        self.assertEqual(raised.exception.code, "ERR_LOOPX_UNKNOWN_DIALECT")
        self.assertNotIn("v9", str(raised.exception))


if __name__ == "__main__":
    unittest.main()

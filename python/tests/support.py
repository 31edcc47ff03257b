"""Shared by the Python tests: the repository's paths, the RFC example
documents, a sample of hostile documents made from them, and the library's
own in-process answers (library_verdicts.js) to compare against."""

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

EXAMPLES = ROOT / "examples"


def example(name: str) -> Any:
    return json.loads((EXAMPLES / f"{name}.json").read_text("utf-8"))


def example_text(name: str) -> str:
    return (EXAMPLES / f"{name}.json").read_text("utf-8")


KIND_TEXT = example_text("intent_kind")
REGISTRATION_TEXT = example_text("registration")
DISPATCH_ID = example("hook_input")["dispatch_id"]

# Each RFC example with the contract that judges it and that contract's context.
EXAMPLE_CASES = [
    ("registration", "registration", {"kinds": [KIND_TEXT]}),
    ("hook-input", "hook_input", {"registration": REGISTRATION_TEXT}),
    (
        "hook-result",
        "hook_result",
        {"registration": REGISTRATION_TEXT, "dispatch_id": DISPATCH_ID, "kinds": [KIND_TEXT]},
    ),
    ("intent-kind", "intent_kind", {}),
    ("dispatch-receipt", "dispatch_receipt", {}),
    ("turn-start-registration", "turn_start_registration", {}),
    ("turn-start-receipt", "turn_start_receipt", {}),
]

# A failure receipt has no example file: one made from the dispatch receipt.
FAILURE_RECEIPT = {
    "schema_version": "loopx_post_writeback_failure_receipt_v0",
}

HOSTILE_STRINGS = [
    "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    "/etc/passwd",
    "https://example.invalid/x",
    "",
    "a" * 300,
    "Ünïcödé",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",
]

HOSTILE_TEXTS = [
    "",
    "{",
    "nul",
    "null",
    '"a string"',
    "[]",
    "1e400",
    "[" * 200 + "]" * 200,
    '{"schema_version": 1, "schema_version": 2}',
    "\ufeff{}",
]


def hostile_documents(doc: Dict[str, Any]) -> List[str]:
    """Mutations of a valid document, as JSON texts: unknown, missing and
    mistyped members, hostile strings, huge and fractional numbers, nulls."""
    out = []
    extra = copy.deepcopy(doc)
    extra["unexpected_member"] = True
    out.append(json.dumps(extra))
    for key, value in doc.items():
        missing = copy.deepcopy(doc)
        del missing[key]
        out.append(json.dumps(missing))
        for replacement in [None, [], {}, 1.5, 18446744073709551617, True]:
            changed = copy.deepcopy(doc)
            changed[key] = replacement
            out.append(json.dumps(changed))
        if isinstance(value, str):
            for s in HOSTILE_STRINGS:
                changed = copy.deepcopy(doc)
                changed[key] = s
                out.append(json.dumps(changed))
        if isinstance(value, dict):
            for inner in value:
                changed = copy.deepcopy(doc)
                changed[key][inner] = HOSTILE_STRINGS[0]
                out.append(json.dumps(changed))
        if isinstance(value, list) and value:
            changed = copy.deepcopy(doc)
            changed[key] = value + value
            out.append(json.dumps(changed))
    return out + HOSTILE_TEXTS


def library_answers(requests: List[Dict[str, Any]]) -> List[Any]:
    """The library's answers to `requests`, computed in one Node.js process
    that calls the library's exports directly."""
    done = subprocess.run(
        ["node", str(ROOT / "python" / "tests" / "library_verdicts.js")],
        input=json.dumps(requests).encode("utf-8"),
        capture_output=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)

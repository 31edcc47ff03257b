"""The adapter's process: one long-lived serve per Adapter, clear errors
when Node.js or the package is missing, a timeout per call, close() and the
context manager, and a serve that answers malformed lines without dying.
Also the throughput of serve against one CLI spawn per call (printed, never
asserted: speed is measured, not tested)."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path

from support import KIND_TEXT, REGISTRATION_TEXT, ROOT, example

from loopx_hooks import (
    Adapter,
    AdapterError,
    AdapterTimeoutError,
    NodeNotFoundError,
    PackageNotFoundError,
)


def fake_node(directory: str, behaviour: str) -> str:
    """An executable standing in for node: answers hello, then `behaviour`."""
    path = Path(directory) / "fake-node"
    path.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import json, sys, time
            for line in sys.stdin:
                request = json.loads(line)
                if request["op"] == "hello":
                    print(json.dumps({{"id": request["id"], "result": {{"protocol": 1, "version": "fake"}}}}), flush=True)
                    continue
                {behaviour}
            """
        )
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


class OneServeProcessPerAdapter(unittest.TestCase):
    def test_clear_error_when_node_is_missing(self):
        with self.assertRaises(NodeNotFoundError) as raised:
            Adapter(node="no-such-node-binary-here")
        self.assertIn("Node.js", str(raised.exception))

    def test_clear_error_when_the_package_is_missing_or_not_built(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaises(PackageNotFoundError) as raised:
                Adapter(package_dir=empty)
            self.assertIn("not found", str(raised.exception))
            Path(empty, "package.json").write_text(json.dumps({"name": "loopx-hooks"}))
            with self.assertRaises(PackageNotFoundError) as raised:
                Adapter(package_dir=empty)
            self.assertIn("not built", str(raised.exception))

    def test_one_process_serves_every_call_until_close(self):
        with Adapter() as adapter:
            adapter.validate_intent_kind_definition(KIND_TEXT)
            first = adapter._proc
            for _ in range(5):
                self.assertTrue(adapter.validate_registration(REGISTRATION_TEXT, [KIND_TEXT]).ok)
            self.assertIs(adapter._proc, first)
            self.assertEqual(adapter.version, json.loads((ROOT / "package.json").read_text())["version"])
        self.assertIsNone(adapter._proc)
        self.assertEqual(first.returncode, 0)

    def test_a_call_that_gets_no_answer_times_out_and_the_next_call_starts_afresh(self):
        with tempfile.TemporaryDirectory() as d:
            node = fake_node(d, "time.sleep(60)")
            with Adapter(node=node, package_dir=str(ROOT), timeout=0.5) as adapter:
                started = time.monotonic()
                with self.assertRaises(AdapterTimeoutError):
                    adapter.canonical_json(1)
                self.assertLess(time.monotonic() - started, 10)
                self.assertIsNone(adapter._proc)
                with self.assertRaises(AdapterTimeoutError):
                    adapter.canonical_json(1)

    def test_a_serve_that_dies_is_an_adapter_error_with_its_last_stderr_line(self):
        with tempfile.TemporaryDirectory() as d:
            node = fake_node(d, 'print("gone for good", file=sys.stderr, flush=True); sys.exit(3)')
            with Adapter(node=node, package_dir=str(ROOT), timeout=10) as adapter:
                with self.assertRaises(AdapterError) as raised:
                    adapter.canonical_json(1)
                self.assertNotIsInstance(raised.exception, AdapterTimeoutError)
                self.assertIn("exited", str(raised.exception))

    def test_a_serve_answering_garbage_is_an_adapter_error(self):
        with tempfile.TemporaryDirectory() as d:
            node = fake_node(d, 'print("not a response", flush=True)')
            with Adapter(node=node, package_dir=str(ROOT), timeout=10) as adapter:
                with self.assertRaises(AdapterError) as raised:
                    adapter.canonical_json(1)
                self.assertIn("not a response", str(raised.exception))
                self.assertIsNone(adapter._proc)

    def test_a_malformed_line_gets_an_error_response_never_a_crash(self):
        lines = [
            b"not json",
            b"[1,2]",
            b'{"id": 1.5, "op": "hello"}',
            b'{"id": 1, "op": "nope"}',
            b'{"id": 2, "op": "validate", "contract": "registration", "document": "{}"}',
            b'{"id": 3, "op": "validate", "contract": "intent-kind", "document": 7}',
            b"\xff\xfe\xfd",
            b'{"id": "last", "op": "validate", "contract": "intent-kind", "document": "{}"}',
        ]
        done = subprocess.run(
            ["node", str(ROOT / "bin" / "loopx-hooks.js"), "serve", "--stdio"],
            input=b"\n".join(lines) + b"\n",
            capture_output=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, b"")
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        self.assertEqual(len(answers), len(lines))
        self.assertEqual([a["id"] for a in answers], [None, None, None, 1, 2, 3, None, "last"])
        for answer in answers[:-1]:
            self.assertEqual(answer["error"]["code"], "ERR_LOOPX_SERVE_BAD_REQUEST", answer)
        self.assertFalse(answers[-1]["result"]["ok"])


class ThroughputOfServeAgainstOneSpawnPerCall(unittest.TestCase):
    def test_throughput_of_serve_against_one_spawn_per_call(self):
        calls, spawns = 500, 20
        registration = example("registration")
        with Adapter() as adapter:
            adapter.validate_registration(registration, [KIND_TEXT])  # start-up is not a call
            started = time.perf_counter()
            for _ in range(calls):
                self.assertTrue(adapter.validate_registration(registration, [KIND_TEXT]).ok)
            serve_s = (time.perf_counter() - started) / calls
        with tempfile.TemporaryDirectory() as d:
            kinds = Path(d, "kinds.json")
            kinds.write_text(KIND_TEXT)
            started = time.perf_counter()
            for _ in range(spawns):
                done = subprocess.run(
                    ["node", str(ROOT / "bin" / "loopx-hooks.js"), "validate", "registration",
                     str(ROOT / "examples" / "registration.json"), "--kinds", str(kinds), "--json"],
                    capture_output=True,
                    timeout=60,
                )
                self.assertEqual(json.loads(done.stdout), {"ok": True})
            spawn_s = (time.perf_counter() - started) / spawns
        print(
            f"\nthroughput: serve {1 / serve_s:,.0f} calls/s ({serve_s * 1e3:.3f} ms/call, {calls} calls); "
            f"one spawn per call {1 / spawn_s:,.1f} calls/s ({spawn_s * 1e3:.1f} ms/call, {spawns} spawns); "
            f"serve is {spawn_s / serve_s:,.0f}x",
            file=sys.stderr,
        )


if __name__ == "__main__":
    unittest.main()

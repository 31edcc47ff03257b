"""The engine's guarantees across the process boundary: a Python host
SIGKILLed between prepare and finish leaves its checkpoint, which recover()
finishes from Python and from Node's HookRuntime with the attempt counted
as in Node (the killed attempt was the first); two Python host processes
on one journal leave one final record per identity."""

import json
import os
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

from dispatch_host import HOOK_ID, INVOCATIONS, TIMEOUT_MS
from dispatch_support import ENABLED, Counted, TempDir, journal_rows, new_registry, not_applicable, registration, until
from support import ROOT

from loopx_hooks import Adapter

HERE = Path(__file__).resolve().parent
# A checkpoint younger than its hook's timeout plus the engine's grace is
# presumed still running; past it, the attempt was cut short and stays counted.
PAST_LIVE_S = (TIMEOUT_MS + 250) / 1000 + 0.2


def host(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(HERE / "dispatch_host.py"), *args],
        cwd=str(HERE),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


class AcrossTheProcessBoundary(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = TempDir()

    def tearDown(self) -> None:
        self.tmp.remove()

    def killed_mid_dispatch(self, name: str, invocations: int = INVOCATIONS) -> str:
        """A journal whose host was SIGKILLed while its producer ran."""
        db = self.tmp.db(name)
        ready = Path(self.tmp.path) / f"{name}.ready"
        child = host("hang", db, name, str(ready), str(invocations))
        try:
            self.assertTrue(until(ready.exists), "the host's producer never started")
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.wait(timeout=30)
            child.stdout.close()
            child.stderr.close()
        self.assertEqual(child.returncode, -signal.SIGKILL)
        # The serve process saw its caller go and closed the journal; the checkpoint stays.
        rows = until(lambda: [r for r in journal_rows(db) if r["state"] == "checkpointed"])
        self.assertEqual([(r["hookId"], r["attempts"]) for r in rows], [(HOOK_ID, 1)])
        time.sleep(PAST_LIVE_S)
        return db

    def test_a_host_killed_mid_dispatch_is_finished_by_recover_from_python(self):
        db = self.killed_mid_dispatch("py")
        with Adapter(timeout=30) as adapter:
            registry = new_registry(adapter)
            producer = Counted(not_applicable)
            registry.register(registration(HOOK_ID, timeout_ms=TIMEOUT_MS, invocations=INVOCATIONS), producer)
            report = registry.recover(journal=db, profile=ENABLED)
            self.assertEqual(producer.calls, 1)
            self.assertEqual(
                [(h["hookId"], h["outcome"], h["attempt"]) for h in report["outcomes"]],
                [(HOOK_ID, "not_applicable", 2)],
            )
            self.assertEqual(report["outcomes"][0]["receipt"]["attempt"], 2)
            self.assertEqual(registry.recover(journal=db, profile=ENABLED), {"outcomes": [], "skipped": 0, "ledgersSkipped": 0})
        self.assertEqual([(r["state"], r["attempts"]) for r in journal_rows(db)], [("not_applicable", 2)])

    def test_a_host_killed_mid_dispatch_is_finished_by_recover_from_node(self):
        db = self.killed_mid_dispatch("node")
        done = subprocess.run(
            ["node", str(HERE / "node_recover.js"), db, HOOK_ID, str(TIMEOUT_MS), str(INVOCATIONS)],
            capture_output=True,
            timeout=60,
            check=True,
        )
        report = json.loads(done.stdout)
        self.assertEqual(
            [(h["hookId"], h["outcome"], h["attempt"]) for h in report["outcomes"]],
            [(HOOK_ID, "not_applicable", 2)],
        )
        self.assertEqual([(r["state"], r["attempts"]) for r in journal_rows(db)], [("not_applicable", 2)])

    def test_the_killed_attempt_stays_counted_so_one_invocation_is_exhausted_by_it_as_in_node(self):
        for side in ("python", "node"):
            db = self.killed_mid_dispatch(f"once_{side}", invocations=1)
            if side == "python":
                with Adapter(timeout=30) as adapter:
                    registry = new_registry(adapter)
                    producer = Counted(not_applicable)
                    registry.register(registration(HOOK_ID, timeout_ms=TIMEOUT_MS, invocations=1), producer)
                    report = registry.recover(journal=db, profile=ENABLED)
                    self.assertEqual(producer.calls, 0)
            else:
                done = subprocess.run(
                    ["node", str(HERE / "node_recover.js"), db, HOOK_ID, str(TIMEOUT_MS), "1"],
                    capture_output=True,
                    timeout=60,
                    check=True,
                )
                report = json.loads(done.stdout)
            self.assertEqual(
                [(h["outcome"], h["attempt"], h["failureCode"]) for h in report["outcomes"]],
                [("exhausted", 1, "dispatch_budget_exhausted")],
                side,
            )

    def test_two_python_hosts_on_one_journal_leave_one_final_record_per_identity(self):
        db = self.tmp.db("race")
        n = 25
        # The journal exists before both start, so neither races the other to create it.
        with Adapter(timeout=30) as adapter:
            new_registry(adapter).recover(journal=db, profile=ENABLED)
        children = [host("race", db, str(n)) for _ in range(2)]
        outputs = []
        for child in children:
            out, err = child.communicate(timeout=120)
            self.assertEqual(child.returncode, 0, err.decode("utf-8", "replace")[-500:])
            outputs.append(json.loads(out))
        rows = journal_rows(db)
        self.assertEqual(len(rows), n)
        self.assertEqual(len({r["dispatchId"] for r in rows}), n)
        self.assertEqual({r["state"] for r in rows}, {"not_applicable"})
        for first, second in zip(*outputs):
            a, b = first["hooks"][0], second["hooks"][0]
            self.assertEqual(a["dispatchId"], b["dispatchId"])
            self.assertIn(a["outcome"], ("not_applicable", "replayed"))
            self.assertIn(b["outcome"], ("not_applicable", "replayed"))
            self.assertEqual(a["receipt"]["result_digest"], b["receipt"]["result_digest"])


if __name__ == "__main__":
    unittest.main()

"""Dispatch from Python over a PostgreSQL journal (the target HookRuntime.open
takes): recorded once, replayed without the producer, and two Python host
processes on one schema leave one final record per identity. Needs the test
server of `npm test` (LOOPX_TEST_PG_URL, and LOOPX_TEST_PG_CA when it has
one); without it these tests fail rather than pass silently."""

import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

from dispatch_support import ENABLED, Counted, journal_rows, new_registry, registration, request, trigger_evaluation

from loopx_hooks import Adapter

HERE = Path(__file__).resolve().parent


def target(name: str) -> dict:
    url = os.environ.get("LOOPX_TEST_PG_URL")
    if not url:
        raise AssertionError(
            "LOOPX_TEST_PG_URL must name a PostgreSQL server: run through `npm test` (scripts/test.sh), "
            "or start one with scripts/pg-server.mjs"
        )
    postgres = {"connectionString": url, "schema": f"py_{name}_{os.getpid()}"}
    if os.environ.get("LOOPX_TEST_PG_CA"):
        postgres["caFile"] = os.environ["LOOPX_TEST_PG_CA"]
    return {"postgres": postgres}


class OnPostgres(unittest.TestCase):
    def test_a_dispatch_is_recorded_once_and_replayed_without_its_producer(self):
        journal = target("replay")
        with Adapter(timeout=60) as adapter:
            registry = new_registry(adapter)
            producer = Counted(trigger_evaluation(adapter))
            registry.register(registration("periodic_report.pg"), producer)
            first = registry.dispatch(request("pg"), journal=journal, profile=ENABLED)["hooks"][0]
            again = registry.dispatch(request("pg"), journal=journal, profile=ENABLED)["hooks"][0]
        self.assertEqual((first["outcome"], again["outcome"], producer.calls), ("recorded", "replayed", 1))
        self.assertEqual(again["receipt"], first["receipt"])
        self.assertEqual([(r["dispatchId"], r["state"]) for r in journal_rows(journal)], [(first["dispatchId"], "proposed")])

    def test_two_python_hosts_on_one_schema_leave_one_final_record_per_identity(self):
        journal = target("race")
        with Adapter(timeout=60) as adapter:
            new_registry(adapter).recover(journal=journal, profile=ENABLED)
        n = 15
        children = [
            subprocess.Popen(
                [sys.executable, str(HERE / "dispatch_host.py"), "race", json.dumps(journal), str(n)],
                cwd=str(HERE),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        outputs = []
        for child in children:
            out, err = child.communicate(timeout=180)
            self.assertEqual(child.returncode, 0, err.decode("utf-8", "replace")[-500:])
            outputs.append(json.loads(out))
        rows = journal_rows(journal)
        self.assertEqual((len(rows), len({r["dispatchId"] for r in rows})), (n, n))
        self.assertEqual({r["state"] for r in rows}, {"not_applicable"})
        for first, second in zip(*outputs):
            self.assertEqual(first["hooks"][0]["receipt"]["result_digest"], second["hooks"][0]["receipt"]["result_digest"])


if __name__ == "__main__":
    unittest.main()

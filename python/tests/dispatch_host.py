"""A Python host process for the cross-process tests, run as a child:

  dispatch_host.py hang DB TAG READY INVOCATIONS
                                       dispatches request(TAG); its producer
                                        writes READY and then never returns
                                        (the test SIGKILLs this process)
  dispatch_host.py race DB N           dispatches request(0..N-1) and prints
                                        the outcomes as one JSON line"""

import json
import sys
import time
from pathlib import Path

from dispatch_support import ENABLED, new_registry, not_applicable, registration, request

from loopx_hooks import Adapter

HOOK_ID = "periodic_report.host"
TIMEOUT_MS = 100
# Attempts an identity may spend: the killed one, and the one recover() makes.
INVOCATIONS = 2


def main() -> None:
    mode, db = sys.argv[1], sys.argv[2]
    if db.startswith("{"):
        db = json.loads(db)  # a PostgreSQL journal target, as HookRuntime.open takes it
    with Adapter(timeout=60) as adapter:
        registry = new_registry(adapter)
        if mode == "hang":
            ready = Path(sys.argv[4])

            def hangs(_value):
                ready.write_text("producing")
                time.sleep(600)

            invocations = int(sys.argv[5])
            registry.register(registration(HOOK_ID, timeout_ms=TIMEOUT_MS, invocations=invocations), hangs)
            registry.dispatch(request(sys.argv[3]), journal=db, profile=ENABLED)
        elif mode == "race":
            registry.register(registration(HOOK_ID, timeout_ms=TIMEOUT_MS), not_applicable)
            outcomes = [registry.dispatch(request(f"race_{i}"), journal=db, profile=ENABLED) for i in range(int(sys.argv[3]))]
            print(json.dumps(outcomes))


if __name__ == "__main__":
    main()

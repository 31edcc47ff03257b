"""Verdicts as the library returns them: ok, or the violations found, each a
JSON Pointer path and a stable rule code (contract-v0 section 2)."""

from dataclasses import dataclass, field
from typing import Any, Tuple


@dataclass(frozen=True)
class Violation:
    path: str
    rule: str


@dataclass(frozen=True)
class Verdict:
    ok: bool
    violations: Tuple[Violation, ...] = ()
    # The accepted document as a Python value (None when rejected); not part
    # of equality, which is about the judgement alone.
    value: Any = field(default=None, compare=False)

    def __bool__(self) -> bool:
        return self.ok

    def as_json(self) -> dict:
        """The verdict in the CLI's --json shape."""
        if self.ok:
            return {"ok": True}
        return {"ok": False, "violations": [{"path": v.path, "rule": v.rule} for v in self.violations]}

"""Where the adapter finds what it runs: the Node.js executable and the
built loopx-hooks package (given, named by the environment, around this
folder when it is the package's own python/, or found by Node's module
resolution from the working directory, which is how a pip-installed copy
finds it)."""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from ._errors import NodeNotFoundError, PackageNotFoundError


def _package_dir(node: str, given: Optional[str]) -> Path:
    candidates = []
    if given is not None:
        candidates.append(Path(given))
    elif os.environ.get("LOOPX_HOOKS_PACKAGE"):
        candidates.append(Path(os.environ["LOOPX_HOOKS_PACKAGE"]))
    else:
        # Run from a checkout or from node_modules/loopx-hooks/python: the package
        # is two folders up. A pip-installed copy has none there and goes on to
        # Node's resolution from the working directory.
        here = Path(__file__).resolve().parents
        if len(here) > 2:
            candidates.append(here[2])
        try:
            found = subprocess.run(
                [node, "-e", "process.stdout.write(require.resolve('loopx-hooks/package.json'))"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            if found.returncode == 0 and found.stdout:
                candidates.append(Path(found.stdout).parent)
        except (OSError, subprocess.SubprocessError):
            pass
    for root in candidates:
        try:
            name = json.loads((root / "package.json").read_text("utf-8")).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if name != "loopx-hooks":
            continue
        if not (root / "dist" / "cli.js").is_file():
            raise PackageNotFoundError(f"loopx-hooks at {root} is not built (run: npm run build)")
        return root
    raise PackageNotFoundError(
        "the loopx-hooks package was not found: install it (npm install loopx-hooks), "
        "or pass package_dir= or set LOOPX_HOOKS_PACKAGE to its directory"
    )


def _node(given: Optional[str]) -> str:
    name = given or os.environ.get("LOOPX_HOOKS_NODE") or "node"
    found = shutil.which(name)
    if found is None:
        raise NodeNotFoundError(
            f"Node.js ('{name}') was not found: install Node.js >= 20, or pass node= or set LOOPX_HOOKS_NODE"
        )
    return found

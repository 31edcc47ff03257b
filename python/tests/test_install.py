"""Installing the adapter: `pip install` of the repository's python/ folder
(what the npm package ships as node_modules/loopx-hooks/python) gives an
importable loopx_hooks outside the checkout, which finds the Node.js package
when told where it is (package_dir=) or by Node's resolution from the
working directory; and the npm package ships the adapter."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

from support import KIND_TEXT, REGISTRATION_TEXT, ROOT

ADAPTER = ROOT / "python"

# Run by the installed copy, in a folder that holds no loopx_hooks.
CHECK = textwrap.dedent(
    """\
    import json, sys
    import loopx_hooks
    from loopx_hooks import Adapter
    package_dir, registration, kind = sys.argv[1:]
    with Adapter(package_dir=package_dir or None, timeout=60) as adapter:
        verdict = adapter.validate_registration(registration, [kind])
        bad = adapter.validate_registration("{}", [kind])
    print(json.dumps({"file": loopx_hooks.__file__, "ok": verdict.ok, "bad": bad.ok, "root": str(adapter._root)}))
    """
)


class InstallingTheAdapter(unittest.TestCase):
    def test_pip_installs_it_and_the_installed_copy_finds_the_package(self):
        with tempfile.TemporaryDirectory(prefix="loopx-py-install-") as tmp:
            # What the npm package ships of python/, copied: an in-tree build
            # writes build/ and *.egg-info beside its sources.
            source = Path(tmp) / "python"
            (source / "loopx_hooks").mkdir(parents=True)
            shutil.copy(ADAPTER / "pyproject.toml", source)
            for module in (ADAPTER / "loopx_hooks").glob("*.py"):
                shutil.copy(module, source / "loopx_hooks")
            site = Path(tmp) / "site"
            done = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", str(site), str(source)],
                capture_output=True,
                text=True,
                timeout=600,
            )
            self.assertEqual(done.returncode, 0, done.stdout[-2000:] + done.stderr[-2000:])
            self.assertEqual(
                sorted(p.name for p in (site / "loopx_hooks").glob("*.py")),
                sorted(p.name for p in (ADAPTER / "loopx_hooks").glob("*.py")),
            )
            env = {k: v for k, v in os.environ.items() if k not in ("LOOPX_HOOKS_PACKAGE", "PYTHONPATH")}
            env["PYTHONPATH"] = str(site)

            def check(cwd: Path, package_dir: str) -> dict:
                ran = subprocess.run(
                    [sys.executable, "-c", CHECK, package_dir, REGISTRATION_TEXT, KIND_TEXT],
                    cwd=str(cwd),
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                self.assertEqual(ran.returncode, 0, ran.stderr[-2000:])
                return json.loads(ran.stdout)

            elsewhere = Path(tmp) / "elsewhere"
            elsewhere.mkdir()
            given = check(elsewhere, str(ROOT))
            self.assertEqual(Path(given["file"]).parent, site / "loopx_hooks")
            self.assertEqual((given["ok"], given["bad"]), (True, False))
            self.assertEqual(Path(given["root"]), ROOT)

            # A project that installed the npm package: found by Node's resolution from the working directory.
            project = Path(tmp) / "project"
            (project / "node_modules").mkdir(parents=True)
            (project / "node_modules" / "loopx-hooks").symlink_to(ROOT, target_is_directory=True)
            resolved = check(project, "")
            self.assertEqual(Path(resolved["file"]).parent, site / "loopx_hooks")
            self.assertEqual((resolved["ok"], resolved["bad"]), (True, False))
            self.assertEqual(Path(resolved["root"]).resolve(), ROOT.resolve())

    def test_the_pip_project_is_the_npm_packages_version_and_needs_nothing_else(self):
        text = (ADAPTER / "pyproject.toml").read_text("utf-8")
        version = json.loads((ROOT / "package.json").read_text("utf-8"))["version"]
        self.assertIn(f'\nversion = "{version}"\n', text)
        self.assertIn('\nname = "loopx-hooks"\n', text)
        self.assertIn('\nrequires-python = ">=3.9"\n', text)
        self.assertIn("\ndependencies = []\n", text)

    def test_the_npm_package_ships_the_adapter(self):
        done = subprocess.run(
            ["npm", "pack", "--dry-run", "--json", "--ignore-scripts"],
            cwd=str(ROOT),
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        files = {f["path"] for f in json.loads(done.stdout)[0]["files"]}
        self.assertIn("python/loopx_hooks/__init__.py", files)
        self.assertIn("python/pyproject.toml", files)
        shipped = {p for p in files if p.startswith("python/")}
        modules = {f"python/loopx_hooks/{p.name}" for p in (ADAPTER / "loopx_hooks").glob("*.py")}
        self.assertEqual(shipped, modules | {"python/pyproject.toml"})


if __name__ == "__main__":
    unittest.main()

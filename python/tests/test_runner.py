"""python -m vramwatch_torch script.py args... runs the script as __main__
with the publisher started, like python -m cProfile."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

from helpers import TESTS, child_env

SCRIPT = textwrap.dedent(
    """
    import json, os, signal, sys
    import vramwatch_torch
    print(json.dumps({
        "argv": sys.argv,
        "name": __name__,
        "path0": sys.path[0],
        "running": vramwatch_torch.is_running(),
        "file": vramwatch_torch.path(),
        "exists": os.path.exists(vramwatch_torch.path() or "/nonexistent"),
        "sigterm_default": signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
        "interval_ms": json.load(open(vramwatch_torch.path()))["interval_ms"] if vramwatch_torch.path() else None,
    }))
    code = int(os.environ.get("EXIT_WITH", "0"))
    if code:
        sys.exit(code)
    """
)


class RunnerTest(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="vwt-runner-")
        self.runtime = os.path.join(self.work, "run")
        os.mkdir(self.runtime, 0o700)
        self.script = os.path.join(self.work, "train.py")
        with open(self.script, "w") as f:
            f.write(SCRIPT)

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def run_m(self, *args, **env):
        e = child_env(self.runtime, **env)
        return subprocess.run(
            [sys.executable, "-m", "vramwatch_torch"] + list(args),
            env=e,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=self.work,
        )

    def test_the_script_gets_its_argv_and_runs_as_main(self):
        r = self.run_m(self.script, "--epochs", "3", "-m", "x", "--interval", "9")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["argv"], [self.script, "--epochs", "3", "-m", "x", "--interval", "9"])
        self.assertEqual(out["name"], "__main__")
        self.assertEqual(out["path0"], self.work)
        self.assertTrue(out["running"])
        self.assertTrue(out["exists"])
        self.assertEqual(out["interval_ms"], 500)
        self.assertTrue(out["sigterm_default"])
        # Removed at exit.
        self.assertFalse(os.path.exists(out["file"]))
        self.assertEqual(os.listdir(os.path.join(self.runtime, "vramwatch")), [])

    def test_options_before_the_script(self):
        r = self.run_m("--interval", "0.25", "--no-largest-free", self.script, "a")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["argv"], [self.script, "a"])
        self.assertEqual(out["interval_ms"], 250)
        r = self.run_m("--interval=2", "--handle-signals", "--", self.script)
        out = json.loads(r.stdout)
        self.assertEqual(out["interval_ms"], 2000)
        self.assertFalse(out["sigterm_default"])

    def test_a_module(self):
        pkg = os.path.join(self.work, "mytrain")
        os.mkdir(pkg)
        open(os.path.join(pkg, "__init__.py"), "w").close()
        shutil.copy(self.script, os.path.join(pkg, "__main__.py"))
        shutil.copy(self.script, os.path.join(pkg, "run.py"))
        for target, file in (("mytrain.run", "run.py"), ("mytrain", "__main__.py")):
            r = self.run_m("-m", target, "x", "--y")
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            self.assertEqual(out["argv"], [os.path.join(pkg, file), "x", "--y"])
            self.assertEqual(out["name"], "__main__")
            self.assertTrue(out["exists"])

    def test_the_scripts_exit_code_passes_through(self):
        r = self.run_m(self.script, EXIT_WITH="5")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(os.listdir(os.path.join(self.runtime, "vramwatch")), [])

    def test_an_exception_in_the_script(self):
        bad = os.path.join(self.work, "bad.py")
        with open(bad, "w") as f:
            f.write("raise ValueError('bad input at line 1')\n")
        r = self.run_m(bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("ValueError: bad input at line 1", r.stderr)

    def test_usage_errors_exit_2_and_say_what_is_wrong(self):
        cases = [
            ((), "no script or -m module to run"),
            (("missing.py",), "can't open file 'missing.py'"),
            (("--interval",), "--interval needs a value"),
            (("--interval", "fast", self.script), "'fast' is not a number"),
            (("--interval", "0", self.script), "out of range (0.05 to 60.0 seconds)"),
            (("--bogus", self.script), "unknown option '--bogus'"),
            (("-m",), "-m needs a module name"),
        ]
        for args, message in cases:
            r = self.run_m(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(message, r.stderr, args)
            self.assertEqual(r.stdout, "")

    def test_help(self):
        r = self.run_m("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("usage: python -m vramwatch_torch", r.stdout)


if __name__ == "__main__":
    unittest.main()

"""Shared set-up for the vramwatch_torch tests: a fake torch, a private
publishing directory per test, and a way to run a child Python process with
the package and the fake on its path."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

TESTS = os.path.dirname(os.path.abspath(__file__))
PYTHON_ROOT = os.path.dirname(TESTS)
for p in (PYTHON_ROOT, TESTS):
    if p not in sys.path:
        sys.path.insert(0, p)

import fake_torch  # noqa: E402
import vramwatch_torch  # noqa: E402

GIB = 1 << 30


class PublisherTest(unittest.TestCase):
    """Each test gets a fresh fake torch, a temporary XDG_RUNTIME_DIR and a
    stopped publisher at the end."""

    def setUp(self):
        self.runtime = tempfile.mkdtemp(prefix="vwt-runtime-")
        os.chmod(self.runtime, 0o700)
        self._env = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR", "PYTORCH_CUDA_ALLOC_CONF", "CUDA_VISIBLE_DEVICES", vramwatch_torch.DISABLE_ENV)}
        os.environ["XDG_RUNTIME_DIR"] = self.runtime
        os.environ.pop(vramwatch_torch.DISABLE_ENV, None)
        self.dir = os.path.join(self.runtime, "vramwatch")
        self.cuda = fake_torch.install()

    def tearDown(self):
        vramwatch_torch.stop()
        fake_torch.uninstall()
        for k, v in self._env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.runtime, ignore_errors=True)

    def read(self, path=None):
        with open(path or vramwatch_torch.path()) as f:
            return json.load(f)

    def wait_for(self, predicate, timeout=10.0, what="condition"):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            value = predicate()
            if value:
                return value
            time.sleep(0.01)
        self.fail("timed out waiting for " + what)


def child_env(runtime, **extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PYTHON_ROOT, TESTS])
    env["XDG_RUNTIME_DIR"] = runtime
    env.pop(vramwatch_torch.DISABLE_ENV, None)
    env.update(extra)
    return env


def run_child(code, runtime, args=(), timeout=60, **kw):
    """Runs `python -c code` with the package and the fake importable."""
    return subprocess.run(
        [sys.executable, "-c", code] + list(args),
        env=child_env(runtime),
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw
    )

"""The file goes away when the process ends, however it ends, and the
program's own exit status and signal handling stay what they were."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from helpers import child_env, run_child

# The child starts with the dispositions a program launched from a shell
# has, whatever this test runner inherited (under `nohup`, or in a
# background job of a non-interactive shell, SIGHUP or SIGINT arrive
# ignored and a child would inherit that).
PRELUDE = """
import os, sys, signal, time
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
HANDLE = os.environ.get("HANDLE", "1") == "1"
import fake_torch
cuda = fake_torch.install()
cuda.init(1)
cuda.use(0, allocated=1 << 30, reserved=2 << 30)
import vramwatch_torch
assert vramwatch_torch.start(interval=0.05, handle_signals=HANDLE), "not started"
path = vramwatch_torch.path()
assert os.path.exists(path)
"""

READY = """
sys.stdout.write(path + "\\n")
sys.stdout.flush()
"""


class ExitTest(unittest.TestCase):
    def setUp(self):
        self.runtime = tempfile.mkdtemp(prefix="vwt-exit-")
        os.chmod(self.runtime, 0o700)
        self.dir = os.path.join(self.runtime, "vramwatch")

    def tearDown(self):
        shutil.rmtree(self.runtime, ignore_errors=True)

    def files(self):
        try:
            return sorted(os.listdir(self.dir))
        except FileNotFoundError:
            return []

    def spawn(self, body, **env):
        p, path = self._spawn(body, **env)
        self.addCleanup(self._reap, p)
        return p, path

    @staticmethod
    def _reap(p):
        if p.poll() is None:
            p.kill()
        p.communicate()

    def _spawn(self, body, **env):
        """Starts a child that publishes and prints its file's path."""
        p = subprocess.Popen(
            [sys.executable, "-c", PRELUDE + READY + body],
            env=child_env(self.runtime, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        path = p.stdout.readline().strip()
        if not path:
            p.kill()
            self.fail("child did not start: " + p.stderr.read())
        self.assertTrue(os.path.exists(path))
        return p, path

    def test_normal_exit(self):
        r = run_child(PRELUDE + "time.sleep(0.2)\nprint('done')", self.runtime)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "done")
        self.assertEqual(r.stderr, "")
        self.assertEqual(self.files(), [])

    def test_sys_exit_keeps_its_code(self):
        r = run_child(PRELUDE + "sys.exit(7)", self.runtime)
        self.assertEqual(r.returncode, 7, r.stderr)
        self.assertEqual(self.files(), [])

    def test_an_uncaught_exception(self):
        r = run_child(PRELUDE + "raise RuntimeError('boom')", self.runtime)
        self.assertEqual(r.returncode, 1)
        self.assertIn("RuntimeError: boom", r.stderr)
        self.assertEqual(self.files(), [])

    def test_keyboard_interrupt(self):
        p, path = self.spawn("time.sleep(60)")
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=20)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("KeyboardInterrupt", err)
        self.assertFalse(os.path.exists(path))

    def test_by_default_signal_handling_is_left_alone(self):
        p, path = self.spawn(
            "print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,"
            " signal.set_wakeup_fd(-1) == -1, flush=True)\ntime.sleep(60)",
            HANDLE="0",
        )
        self.assertEqual(p.stdout.readline().strip(), "True True")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
        self.assertEqual(p.returncode, -signal.SIGTERM)
        # Left behind (harmless: the process is gone); the next start sweeps it.
        self.assertTrue(os.path.exists(path))

    def test_a_framework_chaining_to_our_handler_keeps_the_process_alive(self):
        # PyTorch Lightning composes SIGTERM handlers: its own, then the one
        # it found (ours), and training goes on to a graceful stop.
        body = """
theirs = []
previous = signal.getsignal(signal.SIGTERM)
def compose(signum, frame):
    theirs.append(signum)
    previous(signum, frame)
signal.signal(signal.SIGTERM, compose)
print("wrapped", flush=True)
while not theirs:
    time.sleep(0.01)
time.sleep(0.5)
print("graceful stop", os.path.exists(path), flush=True)
"""
        p, path = self.spawn(body)
        self.assertEqual(p.stdout.readline().strip(), "wrapped")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.strip(), "graceful stop True")
        self.assertFalse(os.path.exists(path))

    def test_sigterm_at_its_default_dies_of_sigterm_and_removes_the_file(self):
        p, path = self.spawn("time.sleep(60)")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.assertFalse(os.path.exists(path))
        self.assertEqual(self.files(), [])

    def test_sighup_likewise(self):
        p, path = self.spawn("time.sleep(60)")
        p.send_signal(signal.SIGHUP)
        p.wait(timeout=20)
        self.assertEqual(p.returncode, -signal.SIGHUP)
        self.assertFalse(os.path.exists(path))

    def test_sigterm_while_the_main_thread_is_stuck_in_a_c_call(self):
        # Locking a mutex the thread already holds never returns, and
        # signals do not interrupt it: the Python handler cannot run (as in
        # a hung collective). The publishing thread ends the process at
        # once instead, as SIGTERM's default action would.
        body = """
import ctypes
libc = ctypes.CDLL(None)
mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER
assert libc.pthread_mutex_lock(mutex) == 0
sys.stdout.write("blocking\\n"); sys.stdout.flush()
libc.pthread_mutex_lock(mutex)
sys.stdout.write("not reached\\n")
"""
        p, path = self.spawn(body)
        self.assertEqual(p.stdout.readline().strip(), "blocking")
        time.sleep(0.2)
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            self.fail("SIGTERM did not end a process stuck in a C call")
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertFalse(os.path.exists(path))

    def test_the_programs_own_sigterm_handler_is_kept(self):
        code = """
import os, sys, signal, time
def mine(signum, frame):
    print("mine ran", flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, mine)
""" + PRELUDE.replace("import os, sys, signal, time", "") + READY + """
assert signal.getsignal(signal.SIGTERM) is mine
time.sleep(60)
"""
        p = subprocess.Popen(
            [sys.executable, "-c", code],
            env=child_env(self.runtime),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.addCleanup(self._reap, p)
        path = p.stdout.readline().strip()
        self.assertTrue(path)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 3, err)
        self.assertEqual(out.strip(), "mine ran")
        # Its handler exits normally, so atexit removes the file.
        self.assertFalse(os.path.exists(path))

    def test_an_ignored_sigterm_stays_ignored(self):
        code = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + PRELUDE + READY + "time.sleep(1.0)\nprint('survived', flush=True)"
        p = subprocess.Popen(
            [sys.executable, "-c", code], env=child_env(self.runtime), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.addCleanup(self._reap, p)
        path = p.stdout.readline().strip()
        self.assertTrue(path)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.strip(), "survived")
        self.assertFalse(os.path.exists(path))

    def test_handlers_are_restored_by_stop(self):
        code = PRELUDE + """
assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
vramwatch_torch.stop()
assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
assert signal.set_wakeup_fd(-1) == -1
assert not os.path.exists(path)
print("ok")
"""
        r = run_child(code, self.runtime)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "ok"), r.stderr)

    def test_a_forked_child_leaves_the_parents_file_and_handlers_alone(self):
        code = PRELUDE + """
pid = os.fork()
if pid == 0:
    # The child: no publisher, default signal handling, and its exit
    # (running atexit) must not remove the parent's file.
    ok = (vramwatch_torch.path() is None
          and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
          and signal.set_wakeup_fd(-1) == -1)
    sys.stdout.flush()
    sys.exit(0 if ok else 5)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert os.path.exists(path), "the child removed the parent's file"
# A child killed by SIGTERM must not take the parent with it.
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
time.sleep(0.2)
os.kill(pid, signal.SIGTERM)
_, status = os.waitpid(pid, 0)
assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status
time.sleep(0.3)
assert os.path.exists(path)
print("parent ok")
"""
        r = run_child(code, self.runtime)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "parent ok"), r.stderr)
        self.assertEqual(self.files(), [])

    def test_sigkill_leaves_a_file_the_next_start_sweeps(self):
        p, path = self.spawn("time.sleep(60)")
        p.kill()
        p.wait(timeout=20)
        self.assertTrue(os.path.exists(path))
        dead = str(p.pid)
        r = run_child(PRELUDE + "print(os.path.basename(path))", self.runtime)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(path))
        # Nothing of the dead process is left (its temporary file neither).
        self.assertEqual([n for n in self.files() if dead in n], [])


if __name__ == "__main__":
    unittest.main()

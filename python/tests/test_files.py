"""The directory, the atomic write, and the sweep of dead processes' files."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import threading
import unittest
import warnings

from helpers import GIB, PublisherTest, vramwatch_torch
from vramwatch_torch import _files


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


class DirectoryTest(PublisherTest):
    def test_created_with_mode_0700_even_under_a_permissive_umask(self):
        old = os.umask(0)
        try:
            self.assertTrue(vramwatch_torch.start(handle_signals=False))
        finally:
            os.umask(old)
        self.assertEqual(mode(self.dir), 0o700)
        self.assertEqual(os.lstat(self.dir).st_uid, os.geteuid())
        self.assertEqual(mode(vramwatch_torch.path()), 0o600)

    def test_created_with_mode_0700_under_a_strict_umask(self):
        old = os.umask(0o777)
        try:
            self.assertTrue(vramwatch_torch.start(handle_signals=False))
        finally:
            os.umask(old)
        self.assertEqual(mode(self.dir), 0o700)

    def _refused(self, reason_part):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertFalse(vramwatch_torch.start(handle_signals=False))
        self.assertIsNone(vramwatch_torch.path())
        msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        self.assertTrue(any(reason_part in m for m in msgs), msgs)
        return msgs

    def test_an_existing_directory_open_to_others_is_refused(self):
        os.mkdir(self.dir)
        os.chmod(self.dir, 0o755)
        self._refused("mode 755")
        self.assertEqual(os.listdir(self.dir), [])
        # The warning is given once, not at every call.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            vramwatch_torch.start(handle_signals=False)
        self.assertEqual(caught, [])

    def test_a_symlink_in_place_of_the_directory_is_refused(self):
        target = tempfile.mkdtemp()
        os.chmod(target, 0o700)
        os.symlink(target, self.dir)
        self._refused("not a directory")
        self.assertEqual(os.listdir(target), [])

    def test_a_file_in_place_of_the_directory_is_refused(self):
        with open(self.dir, "w") as f:
            f.write("x")
        self._refused("not a directory")

    @unittest.skipUnless(os.geteuid() == 0, "needs root to make a directory someone else owns")
    def test_a_directory_owned_by_someone_else_is_refused(self):
        os.mkdir(self.dir, 0o700)
        os.chown(self.dir, 65534, 65534)
        self._refused("owned by uid 65534")

    def test_fallback_is_tmp_with_the_uid_when_no_runtime_dir(self):
        os.environ.pop("XDG_RUNTIME_DIR")
        self.assertEqual(_files.default_directory(), "/tmp/vramwatch-%d" % os.geteuid())
        os.environ["XDG_RUNTIME_DIR"] = "relative/path"
        self.assertEqual(_files.default_directory(), "/tmp/vramwatch-%d" % os.geteuid())
        os.environ["XDG_RUNTIME_DIR"] = "/nonexistent/run/user/1"
        self.assertEqual(_files.default_directory(), "/tmp/vramwatch-%d" % os.geteuid())
        os.environ["XDG_RUNTIME_DIR"] = self.runtime
        self.assertEqual(_files.default_directory(), self.dir)
        self.assertEqual(vramwatch_torch.default_directory(), self.dir)

    def test_an_explicit_directory(self):
        d = os.path.join(self.runtime, "elsewhere")
        self.assertTrue(vramwatch_torch.start(directory=d, handle_signals=False))
        self.assertEqual(os.path.dirname(vramwatch_torch.path()), d)
        self.assertEqual(mode(d), 0o700)


class AtomicWriteTest(PublisherTest):
    def test_readers_never_see_a_partial_file(self):
        os.mkdir(self.dir, 0o700)
        stop = threading.Event()
        bad = []
        seen = set()
        path = _files.file_path(self.dir, 77)

        def reader():
            while not stop.is_set():
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except FileNotFoundError:
                    continue
                try:
                    doc = json.loads(data)
                    seen.add(doc["n"])
                    if doc["pad"] != "y" * doc["n"]:
                        bad.append(data[:60])
                except ValueError:
                    bad.append(data[:60])

        t = threading.Thread(target=reader)
        t.start()
        try:
            for n in range(2000):
                # Sizes vary so a torn write would show as a short or mixed file.
                body = json.dumps({"n": n % 300 * 40, "pad": "y" * (n % 300 * 40)}).encode()
                _files.write_atomically(self.dir, 77, body)
        finally:
            stop.set()
            t.join()
        self.assertEqual(bad, [])
        self.assertGreater(len(seen), 1)
        # Only the target is left: the temporary file was renamed over it.
        self.assertEqual(os.listdir(self.dir), ["77.json"])

    def test_written_through_a_temporary_file_and_one_rename(self):
        os.mkdir(self.dir, 0o700)
        calls = []
        real = os.replace

        def spy(src, dst):
            with open(src) as f:
                calls.append((os.path.basename(src), os.path.basename(dst), f.read()))
            return real(src, dst)

        os.replace = spy
        try:
            _files.write_atomically(self.dir, 5, b'{"a":1}')
        finally:
            os.replace = real
        self.assertEqual(calls, [(".5.json.tmp", "5.json", '{"a":1}')])

    def test_a_symlink_planted_at_the_temporary_name_is_not_followed(self):
        os.mkdir(self.dir, 0o700)
        victim = os.path.join(self.runtime, "victim")
        with open(victim, "w") as f:
            f.write("keep")
        os.symlink(victim, _files.temp_path(self.dir, 9))
        with self.assertRaises(OSError):
            _files.write_atomically(self.dir, 9, b"{}")
        with open(victim) as f:
            self.assertEqual(f.read(), "keep")


class SweepTest(PublisherTest):
    def test_files_of_dead_processes_are_swept_at_start(self):
        os.mkdir(self.dir, 0o700)
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        names = ["%d.json" % dead.pid, ".%d.json.tmp" % dead.pid, "%d.json" % os.getppid(), "notes.txt", "abc.json", "99999999999999999999.json"]
        for n in names:
            with open(os.path.join(self.dir, n), "w") as f:
                f.write("{}")
        vramwatch_torch.start(handle_signals=False)
        left = sorted(os.listdir(self.dir))
        self.assertNotIn("%d.json" % dead.pid, left)
        self.assertNotIn(".%d.json.tmp" % dead.pid, left)
        # A live process's file and files that are not ours stay.
        for n in ("%d.json" % os.getppid(), "notes.txt", "abc.json", "99999999999999999999.json", "%d.json" % os.getpid()):
            self.assertIn(n, left)


if __name__ == "__main__":
    unittest.main()

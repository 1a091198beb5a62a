"""Nothing the publisher meets may raise into the program."""

import logging
import os
import shutil
import threading
import time
import unittest
import warnings

from helpers import GIB, PublisherTest, vramwatch_torch
from vramwatch_torch import _publisher


class NoExceptionEscapesTest(PublisherTest):
    def setUp(self):
        super().setUp()
        self.thread_errors = []
        self._hook = threading.excepthook
        threading.excepthook = lambda args: self.thread_errors.append(args)

    def tearDown(self):
        threading.excepthook = self._hook
        super().tearDown()

    def wait_publishes(self, n):
        p = _publisher.current()
        start = p.seq + p.failures
        self.wait_for(lambda: p.seq + p.failures >= start + n, what="%d publish attempts" % n)

    def test_memory_stats_raising_is_reported_in_the_file_not_raised(self):
        self.cuda.init()
        self.cuda.use(0, allocated=GIB, reserved=GIB)
        self.cuda.fail = RuntimeError("CUDA error: an illegal memory access was encountered")
        with self.assertLogs("vramwatch_torch", level=logging.DEBUG) as logs:
            self.assertTrue(vramwatch_torch.start(interval=0.05, handle_signals=False))
            self.wait_publishes(3)
        doc = self.read()
        self.assertEqual(doc["devices"], [])
        self.assertIn("illegal memory access", doc["error"])
        # Logged once, at debug level, however many times it happens.
        self.assertEqual(len([r for r in logs.records if "illegal memory access" in r.getMessage()]), 1)
        self.assertTrue(all(r.levelno == logging.DEBUG for r in logs.records))
        # It recovers when the figures come back.
        self.cuda.fail = None
        self.wait_for(lambda: self.read()["devices"], what="figures after recovery")
        self.assertIsNone(self.read()["error"])
        self.assertEqual(self.thread_errors, [])

    def test_odd_values_from_torch_do_not_break_the_file(self):
        self.cuda.init()
        self.cuda.memory_stats_as_nested_dict = lambda i: {"allocated_bytes": "lots", "reserved_bytes": {"all": None}, "num_ooms": 2}
        self.cuda.get_device_properties = lambda i: (_ for _ in ()).throw(AssertionError("no props"))
        self.cuda.memory_snapshot = lambda: [{"device": 0, "blocks": [{"state": "inactive"}]}, {}]
        vramwatch_torch.start(interval=0.05, handle_signals=False)
        d = self.read()["devices"][0]
        self.assertEqual((d["allocated"], d["reserved"], d["num_ooms"], d["uuid"]), (0, 0, 2, None))
        self.assertEqual(d["largest_free"], 0)

    def test_the_directory_vanishing_mid_run(self):
        self.cuda.init()
        self.cuda.use(0, allocated=GIB, reserved=GIB)
        vramwatch_torch.start(interval=0.05, handle_signals=False)
        shutil.rmtree(self.dir)
        self.wait_publishes(3)
        self.assertGreaterEqual(_publisher.current().failures, 1)
        self.assertTrue(_publisher.current()._thread.is_alive())
        self.assertFalse(vramwatch_torch.publish_now())
        # Back when the directory is.
        os.mkdir(self.dir, 0o700)
        self.assertTrue(vramwatch_torch.publish_now())
        self.assertEqual(self.thread_errors, [])

    def test_a_base_exception_in_the_thread_stays_there(self):
        vramwatch_torch.start(interval=0.05, handle_signals=False)
        p = _publisher.current()

        def explode():
            raise SystemExit("from the thread")

        p.document = explode
        self.wait_for(lambda: not p._thread.is_alive(), what="the thread to end")
        self.assertEqual(self.thread_errors, [])
        # stop() still cleans up.
        vramwatch_torch.stop()
        self.assertFalse(os.path.exists(p.path))

    def test_an_unwritable_directory_at_start_gives_one_warning_and_false(self):
        os.mkdir(self.dir, 0o700)
        blocker = os.path.join(self.dir, ".%d.json.tmp" % os.getpid())
        os.mkdir(blocker)  # the temporary file cannot be created
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertFalse(vramwatch_torch.start(handle_signals=False))
            self.assertFalse(vramwatch_torch.start(handle_signals=False))
        self.assertEqual(len(caught), 1)
        self.assertIn("not publishing", str(caught[0].message))
        self.assertIsNone(vramwatch_torch.path())

    def test_a_slow_torch_does_not_block_stop_for_long(self):
        self.cuda.init()
        self.cuda.use(0, allocated=GIB, reserved=GIB)
        vramwatch_torch.start(interval=0.05, handle_signals=False)
        real = self.cuda.memory_stats_as_nested_dict
        entered = threading.Event()

        def slow(i):
            entered.set()
            time.sleep(0.5)
            return real(i)

        self.cuda.memory_stats_as_nested_dict = slow
        entered.wait(5)
        path = vramwatch_torch.path()
        t0 = time.monotonic()
        vramwatch_torch.stop()
        self.assertLess(time.monotonic() - t0, 5)
        # The publish in progress finished before the removal, not after.
        time.sleep(0.6)
        self.assertFalse(os.path.exists(path))


if __name__ == "__main__":
    unittest.main()

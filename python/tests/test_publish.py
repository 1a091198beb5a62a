"""What goes into the file, and when."""

import json
import os
import sys
import time
import unittest

from helpers import GIB, PublisherTest, fake_torch, vramwatch_torch
from vramwatch_torch import _collect, _files, _publisher


class PublishTest(PublisherTest):
    def test_figures_come_from_memory_stats(self):
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        self.cuda.init(count=2)
        self.cuda.use(
            1,
            allocated=5 * GIB,
            reserved=8 * GIB,
            active=6 * GIB,
            inactive_split=GIB,
            allocated_peak=7 * GIB,
            reserved_peak=9 * GIB,
            active_peak=7 * GIB + 1,
            inactive_split_peak=2 * GIB,
            retries=4,
            ooms=1,
        )
        self.cuda.uuids[1] = "58c6c0b0-1111-2222-3333-444455556666"
        self.assertTrue(vramwatch_torch.start(handle_signals=False))
        doc = self.read()
        self.assertEqual(doc["schema"], vramwatch_torch.SCHEMA_VERSION)
        self.assertEqual(doc["pid"], os.getpid())
        self.assertEqual(doc["start_time"], _files.start_time_of())
        self.assertTrue(doc["cuda_initialized"])
        self.assertEqual(doc["torch_version"], "2.99.0+fake")
        self.assertEqual(doc["alloc_conf"], "expandable_segments:True")
        self.assertEqual(doc["interval_ms"], 500)
        self.assertLessEqual(abs(doc["t_ms"] - time.time() * 1000), 5000)
        self.assertIsNone(doc["error"])
        # Device 0 was never used: it is not reported.
        self.assertEqual([d["index"] for d in doc["devices"]], [1])
        d = doc["devices"][0]
        self.assertEqual(d["uuid"], "58c6c0b0-1111-2222-3333-444455556666")
        self.assertEqual(d["allocated"], 5 * GIB)
        self.assertEqual(d["reserved"], 8 * GIB)
        self.assertEqual(d["active"], 6 * GIB)
        self.assertEqual(d["inactive_split"], GIB)
        self.assertEqual(d["allocated_peak"], 7 * GIB)
        self.assertEqual(d["reserved_peak"], 9 * GIB)
        self.assertEqual(d["active_peak"], 7 * GIB + 1)
        self.assertEqual(d["inactive_split_peak"], 2 * GIB)
        self.assertEqual(d["num_alloc_retries"], 4)
        self.assertEqual(d["num_ooms"], 1)

    def test_alloc_conf_falls_back_to_the_generic_variable_and_is_valid_utf8(self):
        os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True"
        p = _publisher.Publisher(self.runtime, 0.5, largest_free=False)
        try:
            self.assertEqual(p.document()["alloc_conf"], "expandable_segments:True")
            # Bytes that are not UTF-8 (os.environ keeps them as surrogates).
            os.environ["PYTORCH_CUDA_ALLOC_CONF"] = b"max_split_size_mb:\xff128".decode("utf-8", "surrogateescape")
            text = json.dumps(p.document())
            self.assertNotIn("\\udc", text)
            self.assertEqual(json.loads(text)["alloc_conf"], "max_split_size_mb:\ufffd128")
        finally:
            os.environ.pop("PYTORCH_ALLOC_CONF", None)

    def test_flat_memory_stats_of_older_pytorch_give_the_same_figures(self):
        figures = dict(allocated=3 * GIB, reserved=4 * GIB, inactive_split=GIB // 2, retries=2)
        docs = []
        for nested in (True, False):
            cuda = fake_torch.install(nested=nested)
            cuda.init(count=1)
            cuda.use(0, **figures)
            p = _publisher.Publisher(self.runtime, 0.5, largest_free=False)
            docs.append(p.document()["devices"])
            used = "memory_stats_as_nested_dict" if nested else "memory_stats"
            self.assertGreater(cuda.calls[used], 0)
        self.assertEqual(docs[0], docs[1])
        self.assertEqual(docs[0][0]["inactive_split"], GIB // 2)

    def test_republishes_on_the_interval(self):
        self.cuda.init()
        self.cuda.use(0, allocated=GIB, reserved=2 * GIB)
        vramwatch_torch.start(interval=0.05, handle_signals=False)
        first = self.read()
        self.cuda.use(0, allocated=3 * GIB, reserved=4 * GIB)
        doc = self.wait_for(
            lambda: (lambda d: d if d["devices"] and d["devices"][0]["allocated"] == 3 * GIB else None)(self.read()),
            what="a new figure",
        )
        self.assertGreater(doc["seq"], first["seq"])
        self.assertGreaterEqual(doc["t_ms"], first["t_ms"])
        self.assertIsInstance(doc["publish_us"], int)

    def test_cuda_not_initialised_reports_no_device_and_touches_nothing(self):
        self.cuda.count = 4
        vramwatch_torch.start(handle_signals=False)
        vramwatch_torch.publish_now()
        doc = self.read()
        self.assertFalse(doc["cuda_initialized"])
        self.assertEqual(doc["devices"], [])
        for call in ("memory_stats", "memory_stats_as_nested_dict", "device_count", "memory_snapshot", "get_device_properties"):
            self.assertEqual(self.cuda.calls[call], 0, call)

    def test_torch_is_never_imported_by_us(self):
        fake_torch.uninstall()
        vramwatch_torch.start(handle_signals=False)
        vramwatch_torch.publish_now()
        self.assertNotIn("torch", sys.modules)
        doc = self.read()
        self.assertIsNone(doc["torch_version"])
        self.assertEqual(doc["devices"], [])

    def test_torch_still_being_imported_is_left_alone(self):
        self.cuda.init()
        self.cuda.use(0, allocated=GIB, reserved=GIB)
        torch = sys.modules["torch"]
        torch.__spec__ = type("Spec", (), {"_initializing": True})()
        self.assertIsNone(_collect.loaded_cuda())
        torch.__spec__._initializing = False
        self.assertIs(_collect.loaded_cuda(), self.cuda)

    def test_idle_devices_are_asked_again_only_every_few_seconds(self):
        now = [100.0]
        self.cuda.init(count=8)
        self.cuda.use(3, allocated=GIB, reserved=GIB)
        c = _collect.Collector(largest_free=False, clock=lambda: now[0])
        self.assertEqual([d["index"] for d in c.devices(self.cuda, 0)], [3])
        self.assertEqual(self.cuda.calls["memory_stats_as_nested_dict"], 8)
        c.devices(self.cuda, 0)
        self.assertEqual(self.cuda.calls["memory_stats_as_nested_dict"], 9)
        # The program starts using device 5: seen at the next recheck.
        self.cuda.use(5, allocated=GIB, reserved=GIB)
        now[0] += _collect.IDLE_RECHECK_S + 0.1
        self.assertEqual([d["index"] for d in c.devices(self.cuda, 0)], [3, 5])

    def test_an_oom_before_any_allocation_still_counts_as_used(self):
        self.cuda.init(count=1)
        self.cuda.use(0, ooms=1)
        c = _collect.Collector(largest_free=False)
        devs = c.devices(self.cuda, 0)
        self.assertEqual(devs[0]["num_ooms"], 1)
        self.assertEqual(devs[0]["reserved"], 0)

    def test_largest_free_block_from_the_snapshot_per_device(self):
        self.cuda.init(count=2)
        self.cuda.use(0, allocated=GIB, reserved=2 * GIB)
        self.cuda.use(1, allocated=GIB, reserved=2 * GIB)
        MIB = 1 << 20
        self.cuda.segments = [
            fake_torch.segment(0, [(3 * MIB, "inactive"), (20 * MIB, "active_allocated")]),
            fake_torch.segment(0, [(5 * MIB, "inactive"), (9 * MIB, "active_pending_free")]),
            fake_torch.segment(1, [(2 * MIB, "active_allocated")]),
        ]
        c = _collect.Collector(largest_free=True)
        devs = c.devices(self.cuda, 1234)
        self.assertEqual([d["largest_free"] for d in devs], [5 * MIB, 0])
        self.assertEqual(devs[0]["largest_free_t_ms"], 1234)
        self.assertIsInstance(c.snapshot_us, int)

    def test_the_snapshot_probe_keeps_to_its_time_budget(self):
        now = [0.0]
        perf = [0.0]
        self.cuda.init(count=1)
        self.cuda.use(0, allocated=GIB, reserved=GIB)
        c = _collect.Collector(largest_free=True, clock=lambda: now[0], perf_clock=lambda: perf[0])
        slow = {"n": 0}

        def snapshot():
            slow["n"] += 1
            perf[0] += 0.01  # a 10 ms snapshot: next one not before 20 s
            return []

        self.cuda.memory_snapshot = snapshot
        c.devices(self.cuda, 0)
        self.assertEqual(slow["n"], 1)
        wait = 0.01 / _collect.SNAPSHOT_BUDGET
        for t in (1.0, 2.5, wait * 0.9):
            now[0] = t
            c.devices(self.cuda, 0)
        self.assertEqual(slow["n"], 1)
        now[0] = wait * 1.01
        c.devices(self.cuda, 0)
        self.assertEqual(slow["n"], 2)
        self.assertEqual(c.snapshot_us, 10000)

    def test_largest_free_can_be_turned_off(self):
        self.cuda.init(count=1)
        self.cuda.use(0, allocated=GIB, reserved=GIB)
        vramwatch_torch.start(largest_free=False, handle_signals=False)
        d = self.read()["devices"][0]
        self.assertIsNone(d["largest_free"])
        self.assertEqual(self.cuda.calls["memory_snapshot"], 0)

    def test_start_is_idempotent_and_stop_removes_the_file(self):
        self.assertTrue(vramwatch_torch.start(handle_signals=False))
        path = vramwatch_torch.path()
        self.assertEqual(path, os.path.join(self.dir, "%d.json" % os.getpid()))
        self.assertTrue(vramwatch_torch.is_running())
        self.assertTrue(vramwatch_torch.start(handle_signals=False))
        self.assertEqual(vramwatch_torch.path(), path)
        vramwatch_torch.stop()
        self.assertFalse(os.path.exists(path))
        self.assertIsNone(vramwatch_torch.path())
        self.assertFalse(vramwatch_torch.publish_now())
        vramwatch_torch.stop()  # twice is fine
        self.assertTrue(vramwatch_torch.start(handle_signals=False))
        self.assertTrue(os.path.exists(path))

    def test_bad_intervals_are_refused_with_the_range(self):
        for bad in (0, -1, 0.01, 61, "1", True, None):
            with self.assertRaises(ValueError) as cm:
                vramwatch_torch.start(interval=bad)
            self.assertIn("interval", str(cm.exception))
        self.assertIsNone(vramwatch_torch.path())

    def test_disabled_by_the_environment(self):
        os.environ[vramwatch_torch.DISABLE_ENV] = "1"
        self.assertFalse(vramwatch_torch.start(handle_signals=False))
        self.assertFalse(os.path.exists(self.dir))

    def test_the_file_is_compact_json_well_under_the_readers_limit(self):
        self.cuda.init(count=16)
        for i in range(16):
            self.cuda.use(i, allocated=GIB, reserved=GIB)
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "x" * 1000
        vramwatch_torch.start(handle_signals=False)
        size = os.path.getsize(vramwatch_torch.path())
        self.assertLess(size, 16 * 1024)
        self.assertEqual(len(self.read()["devices"]), 16)


class StartTimeTest(unittest.TestCase):
    def test_matches_proc_stat_and_btime(self):
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/stat") as f:
            btime = int([l for l in f if l.startswith("btime")][0].split()[1])
        expected = int(fields[19]) // os.sysconf("SC_CLK_TCK") + btime
        self.assertEqual(_files.start_time_of(), expected)
        self.assertLessEqual(expected, time.time() + 1)

    def test_a_command_with_spaces_and_parentheses(self):
        # comm may hold ") (": the fields are found after the last ')'.
        import tempfile

        d = tempfile.mkdtemp()
        fake = os.path.join(d, "stat")
        with open(fake, "w") as f:
            f.write("123 (a) b (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4200 9 9\n")
        real_open = open

        def fake_open(path, *a, **kw):
            if path == "/proc/123/stat":
                return real_open(fake, *a, **kw)
            return real_open(path, *a, **kw)

        import builtins

        builtins.open = fake_open
        try:
            got = _files.start_time_of(123)
        finally:
            builtins.open = real_open
        self.assertEqual(got, 4200 // os.sysconf("SC_CLK_TCK") + _files._boot_time())

    def test_a_missing_process_has_no_start_time(self):
        self.assertIsNone(_files.start_time_of(2**31 - 2))


if __name__ == "__main__":
    unittest.main()

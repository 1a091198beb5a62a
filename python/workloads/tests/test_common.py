"""Unit tests of the workloads' shared plumbing that need no GPU and no
torch: fill arithmetic, pacing, process start time, the command line, and
execute()'s truth file and exit status for each outcome.

    python3 -m unittest discover -s python/workloads/tests -p 'test_*.py'
"""

import json
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import common as C  # noqa: E402

GIB, MIB = C.GIB, C.MIB


class FillArithmetic(unittest.TestCase):
    def test_fill_leaves_working_budget_and_slack(self):
        total = 140 * GIB
        f = C.fill_bytes(avail=138 * GIB, working=2 * GIB, budget=30 * GIB, total=total)
        slack = max(256 * MIB, int(0.002 * total))
        self.assertLessEqual(f, 138 * GIB - 32 * GIB - slack)
        self.assertGreater(f, 138 * GIB - 32 * GIB - slack - 2 * MIB)
        self.assertEqual(f % (2 * MIB), 0)

    def test_fill_never_negative(self):
        self.assertEqual(C.fill_bytes(avail=10 * GIB, working=8 * GIB, budget=8 * GIB, total=16 * GIB), 0)

    def test_fill_for_target(self):
        total = 100 * GIB
        f = C.fill_for_target(total, 0.8, used_now=5 * GIB, working=15 * GIB)
        self.assertEqual(f, 60 * GIB)
        self.assertEqual(C.fill_for_target(total, 0.1, used_now=5 * GIB, working=15 * GIB), 0)

    def test_budget_is_speed_independent_bytes(self):
        self.assertEqual(C.growth_budget(655_360_000, 45), 29_491_200_000)


class Pacing(unittest.TestCase):
    def test_rate_and_catch_up(self):
        now = [0.0]
        slept = []

        def sleep(d):
            slept.append(d)
            now[0] += d

        p = C.Pacer(5.0, clock=lambda: now[0], sleep=sleep)
        for _ in range(5):
            p.wait()
        self.assertAlmostEqual(now[0], 1.0)
        # a slow step (0.3 s): the next tick is shortened, not skipped
        now[0] += 0.3
        p.wait()
        self.assertAlmostEqual(now[0], 1.3)
        p.wait()
        self.assertAlmostEqual(now[0], 1.4)
        # far behind (2 s): the schedule restarts from now
        now[0] += 2.0
        p.wait()
        p.wait()
        self.assertAlmostEqual(now[0], 3.6)
        self.assertGreaterEqual(p.late, 2)

    def test_bad_rate(self):
        with self.assertRaises(ValueError):
            C.Pacer(0)


class ProcessStart(unittest.TestCase):
    def test_start_is_before_now_and_recent(self):
        s = C.process_start_unix_ms()
        if s is None:
            self.skipTest("no /proc here")
        now = C.now_ms()
        self.assertLessEqual(s, now + 50)
        self.assertLess(now - s, 24 * 3600 * 1000)


def make_run(tmp, argv, expect="oom", variants=("a", "b")):
    p = C.base_parser("unit", "test", seconds=5, variants=list(variants), growth_s=10)
    args = p.parse_args(["--truth", os.path.join(tmp, "t.json"), *argv])
    return C.Run("unit", args, expect=expect, note="n")


class CommandLine(unittest.TestCase):
    def test_defaults_and_choices(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = make_run(tmp, ["--device", "1", "--speed", "2.5", "--variant", "b"])
            self.assertEqual((r.args.device, r.args.speed, r.args.variant), (1, 2.5, "b"))
            self.assertEqual(r.args.growth_s, 10)
            self.assertEqual(r.hz(4.0), 10.0)
            with self.assertRaises(SystemExit):
                make_run(tmp, ["--speed", "0"])
            with self.assertRaises(SystemExit):
                C.base_parser("unit", "t", seconds=5, variants=["a"]).parse_args(["--variant", "zz"])

    def test_alloc_conf_goes_to_the_environment(self):
        old = os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                make_run(tmp, ["--alloc-conf", "expandable_segments:True"])
                self.assertEqual(os.environ["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True")
        finally:
            os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
            if old is not None:
                os.environ["PYTORCH_CUDA_ALLOC_CONF"] = old

    def test_dry_run_is_short(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = make_run(tmp, ["--dry-run", "--seconds", "100"], expect="no_alarm")
            self.assertLessEqual(r.args.seconds, 8.0)
            r = make_run(tmp, ["--dry-run", "--seconds", "100"], expect="oom")
            self.assertLessEqual(r.args.seconds, 30.0)


class Execute(unittest.TestCase):
    """execute(): outcome, exit status and truth file for every ending."""

    def run_body(self, body, expect="oom", argv=()):
        with tempfile.TemporaryDirectory() as tmp:
            r = make_run(tmp, list(argv), expect=expect)
            r.torch = None  # never touch torch / CUDA here
            code = C.execute(r, body)
            with open(os.path.join(tmp, "t.json")) as f:
                return code, json.load(f), r

    def test_oom(self):
        def body(run):
            run.mark_growth_start()
            run.set_phase("train")
            raise C.SimulatedOOM("boom")

        code, t, r = self.run_body(body)
        self.assertEqual(code, C.EXIT_OOM)
        for k in ("workload", "variant", "speed", "device", "pids", "start_unix_ms", "growth_start_unix_ms",
                  "oom_unix_ms", "oom_pid", "expect", "note", "outcome"):
            self.assertIn(k, t)
        self.assertEqual((t["outcome"], t["expect"], t["oom_phase"], t["oom_pid"]), ("oom", "oom", "train", os.getpid()))
        self.assertEqual(t["pids"], [os.getpid()])
        self.assertLessEqual(t["start_unix_ms"], t["growth_start_unix_ms"])
        self.assertLessEqual(t["growth_start_unix_ms"], t["oom_unix_ms"])

    def test_runtime_error_out_of_memory_counts(self):
        def body(run):
            raise RuntimeError("CUDA error: out of memory")

        code, t, _ = self.run_body(body)
        self.assertEqual((code, t["outcome"], t["oom_kind"]), (C.EXIT_OOM, "oom", "runtime_error"))

    def test_expected_oom_that_never_came(self):
        code, t, _ = self.run_body(lambda run: None)
        self.assertEqual((code, t["outcome"], t["oom_unix_ms"]), (C.EXIT_NO_OOM, "no_oom_before_deadline", None))

    def test_no_alarm_completes(self):
        code, t, _ = self.run_body(lambda run: None, expect="no_alarm")
        self.assertEqual((code, t["outcome"], t["expect"], t["oom_pid"]), (C.EXIT_OK, "completed", "no_alarm", None))

    def test_auto_expect_follows_the_outcome(self):
        def boom(run):
            raise C.SimulatedOOM("x")

        self.assertEqual(self.run_body(boom, expect="auto")[1]["expect"], "oom")
        self.assertEqual(self.run_body(lambda run: None, expect="auto")[1]["expect"], "no_alarm")

    def test_error(self):
        def body(run):
            raise ValueError("bug")

        code, t, _ = self.run_body(body)
        self.assertEqual((code, t["outcome"]), (C.EXIT_ERROR, "error"))

    def test_terminated(self):
        def body(run):
            raise C.Terminated("SIGTERM")

        code, t, _ = self.run_body(body)
        self.assertEqual((code, t["outcome"]), (C.EXIT_TERMINATED, "terminated_SIGTERM"))

    def test_events_are_bounded(self):
        def body(run):
            for i in range(C.MAX_EVENTS + 10):
                run.events.append({"t": 0, "event": "x"}) if len(run.events) < C.MAX_EVENTS else None
            run.event("one_more")

        _, t, _ = self.run_body(body, expect="no_alarm")
        self.assertEqual(len(t["events"]), C.MAX_EVENTS)
        self.assertEqual(t["events_dropped"], 1)

    def test_tick_raises_simulated_oom_in_a_dry_run(self):
        def body(run):
            run.mark_growth_start()
            run.sim_oom_at = time.monotonic()
            run.tick(1)

        code, t, _ = self.run_body(body, argv=["--dry-run"])
        self.assertEqual((code, t["outcome"], t["dry_run"]), (C.EXIT_OOM, "oom", True))


if __name__ == "__main__":
    unittest.main()

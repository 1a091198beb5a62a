"""Tests of the vision workloads (vision_leak.py, vision_steady.py) and
plans/after.plan. Without torch: the planning arithmetic, --help, and the
plan (run_corpus.sh --estimate). With torch (any build): CPU dry runs of
both programs, checking the exit status, the truth file and the events.
About 1 minute.

    python3 -m unittest python/workloads/tests/test_vision.py
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, HERE)

import common as C  # noqa: E402
import vision_leak as VL  # noqa: E402  (imports no torch at module level)

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


class Arithmetic(unittest.TestCase):
    def test_planned_oom_eval_is_the_first_validation_after_growth_s(self):
        # validation j starts after j periods of training and j - 1 validations
        self.assertEqual(VL.planned_oom_eval(45, 10, 2), 4)  # 10, 22, 34, 46
        self.assertEqual(VL.planned_oom_eval(46, 10, 2), 4)
        self.assertEqual(VL.planned_oom_eval(46.5, 10, 2), 5)
        self.assertEqual(VL.planned_oom_eval(5, 10, 2), 1)
        self.assertEqual(VL.planned_oom_eval(45, 9, 0), 5)
        with self.assertRaises(ValueError):
            VL.planned_oom_eval(45, 0, 2)

    def test_round_block(self):
        # the default leak: 256 x 21843 fp32 logits = 21.3 MiB, a 22 MiB block
        self.assertEqual(VL.round_block(256 * 21843 * 4), 22 * C.MIB)
        self.assertEqual(VL.round_block(10 * C.MIB + 1), 12 * C.MIB)
        self.assertEqual(VL.round_block(2048), 2048)
        self.assertEqual(VL.round_block(1), 512)


class CommandLine(unittest.TestCase):
    def test_help_without_cuda(self):
        for wl in ("vision_leak", "vision_steady"):
            p = subprocess.run([sys.executable, os.path.join(HERE, f"{wl}.py"), "--help"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            for opt in ("--speed", "--seconds", "--truth", "--eval-every-s", "--val-batch", "--classes"):
                self.assertIn(opt, p.stdout)
        p = subprocess.run([sys.executable, os.path.join(HERE, "vision_leak.py"), "--help"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("--growth-s", p.stdout)
        p = subprocess.run([sys.executable, os.path.join(HERE, "vision_steady.py"), "--help"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("--target-frac", p.stdout)
        self.assertIn("--res-start", p.stdout)


class AfterPlan(unittest.TestCase):
    PLAN = os.path.join(HERE, "plans", "after.plan")

    def test_estimate(self):
        p = subprocess.run(["bash", os.path.join(HERE, "run_corpus.sh"), "--estimate", self.PLAN],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("WARNING", p.stderr)
        jobs = [ln.split() for ln in p.stdout.splitlines() if re.match(r"^gpu\d+ ", ln)]
        self.assertEqual(len(jobs), 5)
        self.assertEqual({j[0] for j in jobs}, {"gpu0"})  # one GPU
        m = re.search(r"budget: expected wall time (\d+) s", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        self.assertLess(int(m.group(1)), 360)  # under 6 minutes

    def test_jobs(self):
        leak, steady = set(), 0
        with open(self.PLAN) as f:
            for ln in f:
                tok = ln.split("#")[0].split()
                if not tok:
                    continue
                self.assertEqual(tok[0], "gpu0")
                self.assertTrue(os.path.exists(os.path.join(HERE, tok[1] + ".py")))
                args = dict(zip(tok[2::1], tok[3::1]))
                if tok[1] == "vision_leak":
                    leak.add((float(args["--speed"]), int(args["--seed"])))
                elif tok[1] == "vision_steady":
                    steady += 1
        self.assertEqual(leak, {(1.0, 1), (2.0, 1), (1.0, 2), (2.0, 2)})
        self.assertEqual(steady, 1)


def dry_run(wl, *extra):
    with tempfile.TemporaryDirectory() as tmp:
        truth = os.path.join(tmp, "t.json")
        p = subprocess.run([sys.executable, os.path.join(HERE, f"{wl}.py"), "--dry-run", "--truth", truth,
                            "--speed", "2", *extra], capture_output=True, text=True, timeout=120)
        t = None
        if os.path.exists(truth):
            with open(truth) as f:
                t = json.load(f)
        return p, t


@unittest.skipUnless(HAVE_TORCH, "torch is not installed")
class DryRun(unittest.TestCase):
    def check_common(self, p, t, code):
        self.assertEqual(p.returncode, code, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertIsNotNone(t)
        self.assertEqual(t["speed"], 2.0)
        self.assertTrue(t["dry_run"])
        self.assertIsNotNone(t["start_unix_ms"])
        self.assertIsNotNone(t["growth_start_unix_ms"])
        self.assertLessEqual(t["start_unix_ms"], t["growth_start_unix_ms"])
        # every stdout line is JSON, and the last one is the truth
        lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
        self.assertEqual(lines[-1]["kind"], "truth")
        return [e["event"] for e in t["events"]]

    def test_leak_ooms(self):
        p, t = dry_run("vision_leak")
        events = self.check_common(p, t, C.EXIT_OOM)
        self.assertEqual((t["workload"], t["variant"], t["outcome"], t["expect"]), ("vision_leak", "outputs", "oom", "oom"))
        self.assertIn(t["oom_pid"], t["pids"])
        self.assertLessEqual(t["growth_start_unix_ms"], t["oom_unix_ms"])
        self.assertEqual(t["oom_phase"], "train")
        self.assertEqual(events[-1], "oom")
        for k in ("leak_bytes_per_step", "eval_every_steps", "planned_oom_after_growth_start_s", "fill_bytes"):
            self.assertIn(k, t["plan"])
        self.assertIn("corpus_load_done", events)

    def test_leak_validates_and_ends_epochs(self):
        # a validation after every step, an epoch every 2 steps (batch 4)
        p, t = dry_run("vision_leak", "--eval-every-s", "0.1", "--epoch-images", "8")
        events = self.check_common(p, t, C.EXIT_OOM)
        self.assertEqual((t["outcome"], t["expect"]), ("oom", "oom"))
        for e in ("eval_start", "eval_end", "epoch_end", "oom"):
            self.assertIn(e, events)
        ev = [e for e in t["events"] if e["event"] == "eval_end"][0]
        for k in ("top1", "top5", "nll"):
            self.assertIn(k, ev)

    def test_steady_completes(self):
        p, t = dry_run("vision_steady", "--resize-at-s", "0.5", "--eval-every-s", "1")
        events = self.check_common(p, t, C.EXIT_OK)
        self.assertEqual((t["workload"], t["outcome"], t["expect"]), ("vision_steady", "completed", "no_alarm"))
        self.assertIsNone(t["oom_unix_ms"])
        self.assertIsNone(t["oom_pid"])
        for e in ("resize", "growth_end", "eval_start", "eval_end"):
            self.assertIn(e, events)
        self.assertLessEqual(t["growth_start_unix_ms"], t["growth_end_unix_ms"])
        for k in ("target_frac", "fill_bytes", "settle_frac_estimate", "peak_frac_estimate"):
            self.assertIn(k, t["plan"])


if __name__ == "__main__":
    unittest.main()

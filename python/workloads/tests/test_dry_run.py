"""Runs every workload (and variant) with --dry-run: on the CPU, tiny sizes,
a few seconds each; the OOM shapes end in a simulated OOM. Checks the exit
status and the truth file. Needs torch (any build); skipped without it.
About 2 minutes.

    python3 -m unittest python/workloads/tests/test_dry_run.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

# (workload, extra args, expected exit status, expected outcome, expect)
CASES = [
    ("leak_keep", [], 3, "oom", "oom"),
    ("leak_keep", ["--variant", "loss_graph"], 3, "oom", "oom"),
    ("curriculum", [], 3, "oom", "oom"),
    ("curriculum", ["--variant", "seqlen"], 3, "oom", "oom"),
    ("eval_spike", ["--eval-every-s", "0.6", "--val-batches", "3"], 3, "oom", "oom"),
    ("eval_spike", ["--variant", "cached", "--eval-every-s", "0.6", "--val-batches", "3"], 3, "oom", "oom"),
    ("grad_accum", ["--accum", "3"], 3, "oom", "oom"),
    ("grad_accum", ["--variant", "noleak", "--accum", "3", "--seconds", "5"], 0, "completed", "no_alarm"),
    ("empty_cache_saw", ["--window", "3"], 3, "oom", "oom"),
    ("two_proc", ["--linger-s", "0.5"], 3, "oom", "oom"),
    ("fragment", [], 3, "oom", "oom"),
    ("fragment", ["--variant", "expandable", "--seconds", "5"], 0, "completed", "no_alarm"),
    ("healthy_train", ["--warmup-s", "1", "--eval-every-s", "1", "--seconds", "5"], 0, "completed", "no_alarm"),
    ("kv_plateau", ["--tau-s", "0.2", "--seconds", "5"], 0, "completed", "no_alarm"),
    ("kv_plateau", ["--variant", "leak", "--tau-s", "0.2"], 3, "oom", "oom"),
    ("dataset_load", ["--seconds", "5"], 0, "completed", "no_alarm"),
    ("weights_load", ["--seconds", "5"], 0, "completed", "no_alarm"),
]


@unittest.skipUnless(HAVE_TORCH, "torch is not installed")
class DryRun(unittest.TestCase):
    def test_every_workload(self):
        for wl, extra, code, outcome, expect in CASES:
            with self.subTest(workload=wl, args=extra), tempfile.TemporaryDirectory() as tmp:
                truth = os.path.join(tmp, "t.json")
                p = subprocess.run([sys.executable, os.path.join(HERE, f"{wl}.py"), "--dry-run", "--truth", truth,
                                    "--speed", "2", *extra], capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, code, p.stdout[-2000:] + p.stderr[-2000:])
                with open(truth) as f:
                    t = json.load(f)
                self.assertEqual((t["outcome"], t["expect"], t["speed"]), (outcome, expect, 2.0))
                self.assertIsNotNone(t["start_unix_ms"])
                if outcome == "oom":
                    self.assertIn(t["oom_pid"], t["pids"])
                    self.assertLessEqual(t["start_unix_ms"], t["oom_unix_ms"])
                if wl == "two_proc":
                    self.assertEqual(len(t["pids"]), 2)
                    self.assertEqual(t["oom_role"], "victim")
                    self.assertEqual(t["roles"][str(t["oom_pid"])], "victim")
                    self.assertIsNotNone(t["growth_start_unix_ms"])
                # every stdout line is JSON, and the last one is the truth
                lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
                self.assertEqual(lines[-1]["kind"], "truth")

    def test_a_kv_cache_planned_faster_than_its_server_is_slowed(self):
        # 4 prompts (the dry-run sizes) at tau 1 ms ask for thousands of new
        # prompts a second: the server takes a few hundred, so tau is
        # raised, and the growth, the rate and the events say so.
        with tempfile.TemporaryDirectory() as tmp:
            truth = os.path.join(tmp, "t.json")
            p = subprocess.run([sys.executable, os.path.join(HERE, "kv_plateau.py"), "--dry-run", "--truth", truth,
                                "--speed", "2", "--tau-s", "0.001", "--seconds", "3"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
            with open(truth) as f:
                t = json.load(f)
            plan = t["plan"]
            self.assertEqual(plan["tau_s_asked"], 0.001)
            self.assertGreater(plan["tau_s_speed1"], 0.001)
            busy = plan["prompts"] * 2 * plan["new_request_s"] / plan["tau_s_speed1"]
            self.assertAlmostEqual(busy, 0.6, delta=0.02)  # new_request_s is rounded
            self.assertAlmostEqual(plan["requests_per_s_speed1"], plan["prompts"] / plan["tau_s_speed1"])
            raised = [e for e in t["events"] if e["event"] == "tau_raised"]
            self.assertEqual(len(raised), 1, t["events"])
            growth = [e for e in t["events"] if e["event"] == "growth_start"]
            self.assertAlmostEqual(growth[0]["tau_s"], plan["tau_s_speed1"] / 2)


if __name__ == "__main__":
    unittest.main()

"""two_proc: two processes share one GPU; one grows, the other one dies.

Run without --role, this program is a launcher (it never touches CUDA)
that starts two copies of itself on the same GPU:

leaker   Someone's notebook scoring a data set with a small bf16 GPT and
         forgetting torch.no_grad(): preds.append(model(x)) keeps every
         batch's autograd graph (its saved activations) alive. Grows at a
         steady ~0.5 GB/s at speed 1 and never fails itself.
victim   A steady bf16 GPT training job (5 steps/s) that holds most of the
         GPU (model, optimizer, a GPU-resident data set) and validates every
         --eval-every-s seconds: the validation keeps every batch's fp32
         logits and concatenates them (a spike of ~13 GiB above the
         training's own peak), then frees them and calls
         torch.cuda.empty_cache() "to give memory back". So it has
         to get its validation memory from the driver again every time, and
         one time the leaker has taken it: the victim's validation raises
         torch.OutOfMemoryError. The victim is the one that OOMs.

Both first set up (leaker first, then the victim, which sizes its data set
knowing the leaker's rate: the free memory at the start is the victim's
spike plus (--oom-eval - 0.5) periods of the leaker's growth, so
validation number --oom-eval is planned to be the first that fails, with
half a period of growth to spare on either side), then both start together
(the launcher tells them when, on stdin). After the victim's OOM the
launcher stops the leaker (SIGTERM) --linger-s seconds later.

Ground truth (written by the launcher): pids = [leaker, victim], roles,
growth_start = the leaker's first step, oom_pid = the victim, oom_unix_ms
= the victim's OutOfMemoryError; each child also writes its own truth next
to it (<truth>.leaker.json, <truth>.victim.json).
"""

import json
import os
import subprocess
import sys
import threading
import time

import common as C

ROLES = ("launcher", "leaker", "victim")


def main():
    p = C.base_parser("two_proc", __doc__, seconds=150, variants=["default"], growth_s=None)
    p.add_argument("--role", default="launcher", choices=ROLES, help=argparse_hidden())
    p.add_argument("--eval-every-s", type=float, default=8.0, help="victim: seconds between validations at speed 1")
    p.add_argument("--oom-eval", type=int, default=5, help="victim: the validation planned to fail (1 = first)")
    p.add_argument("--val-batches", type=int, default=16)
    p.add_argument("--leak-hz", type=float, default=1.25, help="leaker: batches per second at speed 1")
    p.add_argument("--peer-bps", type=float, default=None, help=argparse_hidden())
    p.add_argument("--linger-s", type=float, default=3.0, help="launcher: seconds between the victim's exit and stopping the leaker")
    args = p.parse_args()
    if args.role == "launcher":
        run = C.Run("two_proc", args, expect="oom",
                    note="leaker (no_grad forgotten, outputs kept) grows; victim (training, empty_cache after each validation) OOMs")
        sys.exit(launch(run))
    run = C.Run(f"two_proc.{args.role}", args, expect="no_alarm" if args.role == "leaker" else "oom")
    C.main_for(run, leaker if args.role == "leaker" else victim)


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


# --------------------------------------------------------------------------
# launcher


class Child:
    def __init__(self, run, role, extra):
        a = run.args
        self.role = role
        self.truth_path = f"{run.truth_path}.{role}.json"
        cmd = [sys.executable, os.path.abspath(__file__), "--role", role, "--device", str(a.device),
               "--speed", str(a.speed), "--seconds", str(a.seconds), "--truth", self.truth_path,
               "--seed", str(a.seed), "--progress-s", str(a.progress_s),
               "--eval-every-s", str(a.eval_every_s), "--oom-eval", str(a.oom_eval),
               "--val-batches", str(a.val_batches), "--leak-hz", str(a.leak_hz), *extra]
        if a.fill_gib is not None and role == "victim":
            cmd += ["--fill-gib", str(a.fill_gib)]
        if a.dry_run:
            cmd.append("--dry-run")
        if not a.vw_torch:
            cmd.append("--no-vw-torch")
        if a.alloc_conf:
            cmd += ["--alloc-conf", a.alloc_conf]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.pid = self.proc.pid
        self.ready = threading.Event()
        self.ready_msg = None
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            try:
                d = json.loads(line)
                d = {"role": self.role, "pid": self.pid, **d} if isinstance(d, dict) else d
                if isinstance(d, dict) and d.get("kind") == "ready":
                    self.ready_msg = d
                    self.ready.set()
                print(json.dumps(d), flush=True)
            except ValueError:
                print(f"[{self.role} {self.pid}] {line}", flush=True)
        self.ready.set()  # exited

    def go(self, t0):
        try:
            self.proc.stdin.write(f"go {t0:.3f}\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()

    def truth(self):
        try:
            with open(self.truth_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None


def launch(run):
    a = run.args
    kids = []
    outcome, code = "error", C.EXIT_ERROR
    try:
        run.set_phase("setup_leaker")
        leak = Child(run, "leaker", [])
        kids.append(leak)
        if not leak.ready.wait(timeout=120) or leak.ready_msg is None:
            raise RuntimeError("the leaker did not get ready")
        run.event("leaker_ready", pid=leak.pid, **{k: leak.ready_msg.get(k) for k in ("bytes_per_step", "bps_speed1")})
        run.set_phase("setup_victim")
        vic = Child(run, "victim", ["--peer-bps", str(leak.ready_msg["bps_speed1"])])
        kids.append(vic)
        if not vic.ready.wait(timeout=180) or vic.ready_msg is None:
            raise RuntimeError("the victim did not get ready")
        run.event("victim_ready", pid=vic.pid, **{k: vic.ready_msg.get(k) for k in ("fill_bytes", "spike_bytes", "free_at_start_bytes")})
        t0 = time.time() + 0.5
        for k in kids:
            k.go(t0)
        run.set_phase("running")
        run.event("go", t0_ms=int(t0 * 1000))
        # wait for the first to exit
        first = None
        while first is None:
            for k in kids:
                if k.proc.poll() is not None:
                    first = k
                    break
            if run.elapsed() > a.seconds + 20:
                break
            time.sleep(0.05)
        if first is not None:
            run.event("exited", role=first.role, pid=first.pid, rc=first.proc.returncode)
        time.sleep(a.linger_s)
        for k in kids:
            k.stop()
        for k in kids:
            try:
                k.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                k.proc.kill()
                k.proc.wait()
            k.thread.join(timeout=5)
        outcome, code = "completed", C.EXIT_NO_OOM
    except C.Terminated as e:
        outcome, code = f"terminated_{e}", C.EXIT_TERMINATED
        for k in kids:
            k.stop()
        for k in kids:
            try:
                k.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                k.proc.kill()
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"kind": "error", "msg": str(e)}), flush=True)
        for k in kids:
            k.stop()
            try:
                k.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                k.proc.kill()
    truths = {k.role: k.truth() for k in kids}
    d = combine(run, kids, truths, outcome, code)
    C.write_json(run.truth_path, d)
    print(json.dumps({"kind": "truth", **{k: v for k, v in d.items() if k not in ("events", "children")}}), flush=True)
    return d["exit_code"]


def combine(run, kids, truths, outcome, code):
    base = run.truth(outcome, code)
    pids = [k.pid for k in kids]
    roles = {str(k.pid): k.role for k in kids}
    ooms = sorted((t["oom_unix_ms"], t["pid"], role) for role, t in truths.items() if t and t.get("oom_unix_ms"))
    leak_t = truths.get("leaker") or {}
    vic_t = truths.get("victim") or {}
    base.update({
        "pids": pids,
        "launcher_pid": run.pid,
        "roles": roles,
        "growth_start_unix_ms": leak_t.get("growth_start_unix_ms"),
        "child_start_unix_ms": {role: (t or {}).get("start_unix_ms") for role, t in truths.items()},
        "device_name": vic_t.get("device_name") or leak_t.get("device_name"),
        "device_uuid": vic_t.get("device_uuid") or leak_t.get("device_uuid"),
        "plan": {"leaker": leak_t.get("plan"), "victim": vic_t.get("plan")},
        "children": truths,
    })
    if ooms:
        t, pid, role = ooms[0]
        base.update({"oom_unix_ms": t, "oom_pid": pid, "oom_role": role,
                     "oom_phase": (truths[role] or {}).get("oom_phase"),
                     "oom_message": (truths[role] or {}).get("oom_message"),
                     "at_oom": (truths[role] or {}).get("at_oom"),
                     "outcome": "oom" if role == "victim" else "oom_unexpected_process",
                     "exit_code": C.EXIT_OOM})
        if role != "victim":
            base["note"] += " | UNEXPECTED: the leaker hit the OOM first"
    else:
        base.update({"oom_unix_ms": None, "oom_pid": None})
        if outcome == "completed":
            base["outcome"] = "no_oom_before_deadline"
    return base


# --------------------------------------------------------------------------
# children


def wait_for_go(run):
    """Prints ready, blocks until the launcher says go, then sleeps until
    the agreed moment."""
    line = sys.stdin.readline()
    if not line.startswith("go "):
        raise C.Terminated("no go from the launcher")
    t0 = float(line.split()[1])
    d = t0 - time.time()
    if d > 0:
        time.sleep(d)


def ready(run, **data):
    print(json.dumps({"kind": "ready", **data}), flush=True)


def leaker(run):
    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=1024, layers=4, heads=16, max_t=1024, B=4, T=512)
    V, B, T = z["vocab"], z["B"], z["T"]
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=z["d"], layers=z["layers"], heads=z["heads"], max_t=z["max_t"])

    def batch():
        return torch.randint(0, V, (B, T), device=dev)

    model(batch())  # warm-up (no torch.no_grad(): the bug)
    held, _, per_step = C.measure_peak(run, lambda: model(batch()))
    del held
    bps = per_step * a.leak_hz
    run.plan.update({"bytes_per_step": per_step, "steps_per_s_speed1": a.leak_hz, "bps_speed1": bps})
    ready(run, bytes_per_step=per_step, bps_speed1=bps)
    wait_for_go(run)
    run.set_phase("score")
    preds = []  # the leak
    pacer = run.pacer(a.leak_hz)
    run.mark_growth_start(bytes_per_s=int(bps * a.speed))
    n = 0
    while not run.time_up():
        preds.append(model(batch()))
        n += 1
        run.tick(n, kept=len(preds))
        pacer.wait()


def victim(run):
    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=1024, layers=8, heads=16, max_t=1024, B=8, T=512)
    V, B, T = z["vocab"], z["B"], z["T"]
    hz = 5.0
    eval_every = max(1, round(a.eval_every_s * hz))
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=z["d"], layers=z["layers"], heads=z["heads"], max_t=z["max_t"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def train_step(x, y):
        loss = lm_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    def rand_batch():
        xy = torch.randint(0, V, (B, T + 1), device=dev)
        return xy[:, :-1], xy[:, 1:]

    def validate(batches, pacer=None):
        model.eval()
        outs, tgts = [], []
        with torch.no_grad():
            for xv, yv in batches:
                outs.append(model(xv).float())
                tgts.append(yv)
                run.tick()
                if pacer is not None:
                    pacer.wait()
            allv, allt = torch.cat(outs), torch.cat(tgts)
            del outs, tgts
            vl = torch.nn.functional.cross_entropy(allv.view(-1, V), allt.view(-1))
        model.train()
        return float(vl)

    run.set_phase("warmup")
    for _ in range(3):
        train_step(*rand_batch())
    _, step_peak, _ = C.measure_peak(run, lambda: train_step(*rand_batch()))
    run.set_phase("sanity_eval")
    _, eval_peak, _ = C.measure_peak(run, lambda: validate(rand_batch() for _ in range(a.val_batches)))
    # What a validation needs on top of the training's own memory when the
    # GPU is full (the allocator then frees its cache and retries).
    spike = max(0, eval_peak - step_peak)
    if not run.dry:
        torch.cuda.empty_cache()
    train_step(*rand_batch())  # the training working set, cached again
    C.sync(run)
    period_growth = (a.peer_bps or 0) * a.eval_every_s
    free_target = spike + int((a.oom_eval - 0.5) * period_growth)
    if run.dry:
        free_now, fill = 0, 0
    else:
        free_now = torch.cuda.mem_get_info(dev)[0]
        fill = int(a.fill_gib * C.GIB) if a.fill_gib is not None else max(0, free_now - free_target)
        fill -= fill % (2 * C.MIB)
    run.plan.update({"step_peak_bytes": step_peak, "eval_peak_bytes": eval_peak, "spike_bytes": spike, "peer_bps_speed1": a.peer_bps, "peer_growth_per_period_bytes": period_growth,
                     "free_before_fill_bytes": free_now, "free_target_bytes": free_target, "fill_bytes": fill,
                     "eval_every_steps": eval_every, "planned_oom_eval": a.oom_eval,
                     "spike_exceeds_period_growth": spike > period_growth})
    run.set_phase("load_data")
    corpus = C.GpuCorpus(run, fill, V)
    ready(run, fill_bytes=fill, spike_bytes=spike, free_at_start_bytes=free_target)
    wait_for_go(run)

    run.set_phase("train")
    run.event("train_start")
    if run.dry:
        run.sim_oom_at = time.monotonic() + 2.0  # the OOM path, on the CPU
    pacer = run.pacer(hz)
    step = 0
    n_eval = 0
    while not run.time_up():
        x, y = corpus.batch(B, T)
        loss = train_step(x, y)
        step += 1
        run.tick(step, **({"loss": round(loss.item(), 4)} if step % 25 == 0 else {}))
        if step % eval_every == 0:
            n_eval += 1
            run.set_phase("eval")
            run.event("eval_start", n=n_eval)
            vl = validate((corpus.batch(B, T) for _ in range(a.val_batches)), run.pacer(20.0))
            if not run.dry:
                torch.cuda.empty_cache()
            run.event("eval_end", n=n_eval, val_loss=round(vl, 3))
            run.set_phase("train")
            pacer = run.pacer(hz)
        pacer.wait()


if __name__ == "__main__":
    main()

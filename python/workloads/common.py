"""Shared plumbing for the vramwatch workload corpus.

Every workload is a small, ordinary PyTorch program (a training loop, an
inference server, a data loader). What they share lives here and has nothing
to do with the memory shape itself:

* the command line every workload takes (--device, --speed, --seconds,
  --truth, --fill-gib, ...);
* `Run`: wall-clock bookkeeping, progress lines, events and the ground-truth
  JSON written at the end (also after an out-of-memory error);
* `Pacer`: steps at a fixed rate, as a loop bound by its data loader or its
  request stream would run. --speed multiplies that rate, so it multiplies
  the growth rate of every shape while keeping its bytes per step;
* `plan_fill`: how much memory to take up front (a GPU-resident data set) so
  the out-of-memory error comes after roughly --growth-s seconds of growth at
  speed 1, whatever the exact free memory of the card;
* `GpuCorpus`: that GPU-resident token data set, which the training loops
  really sample their batches from;
* `GPT`: a plain torch.nn decoder-only transformer.

Nothing here imports torch at module level, so the argument handling and the
arithmetic can be unit-tested without it (tests/test_common.py).
"""

import argparse
import gc
import json
import math
import os
import random
import signal
import socket
import sys
import time
import traceback

GIB = 1 << 30
MIB = 1 << 20

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_OOM = 3
EXIT_NO_OOM = 4  # an OOM was expected but --seconds ran out first
EXIT_TERMINATED = 5

HERE = os.path.dirname(os.path.abspath(__file__))

# Bound the events kept in the truth file (progress lines are only printed).
MAX_EVENTS = 400


def now_ms():
    return int(time.time() * 1000)


def process_start_unix_ms():
    """When this process was started (not when Python got here), from /proc:
    now minus (uptime now - the process's start time after boot). /proc/uptime
    has 10 ms resolution. None where /proc does not say."""
    try:
        with open("/proc/self/stat") as f:
            stat = f.read()
        # The command name (field 2) may hold spaces; fields after ')' are fixed.
        fields = stat[stat.rindex(")") + 2 :].split()
        start_ticks = int(fields[19])  # field 22 of the whole line
        hz = os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        t = time.time()
        return int((t - (uptime - start_ticks / hz)) * 1000)
    except (OSError, ValueError, IndexError):
        return None


_IMPORT_MS = now_ms()


def gib(n):
    return round(n / GIB, 3)


# --------------------------------------------------------------------------
# Command line


def base_parser(workload, description, *, seconds, variants, growth_s=None, target_frac=None):
    """The options every workload takes. `variants` is a list of names, the
    first the default; `growth_s` is the default target duration of the
    growth at speed 1 (OOM shapes); `target_frac` the default share of the
    GPU a no-alarm shape settles at."""
    p = argparse.ArgumentParser(
        prog=f"{workload}.py",
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--device", type=int, default=0, help="CUDA device index (NVML order: the runner sets CUDA_DEVICE_ORDER=PCI_BUS_ID)")
    p.add_argument("--speed", type=float, default=1.0, help="multiplies the growth rate (the step / request / chunk rate); default 1.0")
    p.add_argument("--seconds", type=float, default=seconds, help=f"wall-time limit counted from process start (default {seconds})")
    p.add_argument("--truth", default=None, help="where to write the ground-truth JSON (default ./<workload>.truth.json)")
    p.add_argument("--variant", default=variants[0], choices=variants, help=f"default {variants[0]}")
    p.add_argument("--fill-gib", type=float, default=None,
                   help="memory (GiB) to take up front as a GPU-resident data set; default: planned from the free memory")
    if growth_s is not None:
        p.add_argument("--growth-s", type=float, default=growth_s,
                       help=f"planned growth time to OOM at speed 1 (default {growth_s}); sizes the automatic fill")
        p.add_argument("--headroom-gib", type=float, default=None,
                       help="instead of --growth-s: leave this much (GiB) for growth above the working set")
    if target_frac is not None:
        p.add_argument("--target-frac", type=float, default=target_frac,
                       help=f"share of the GPU's memory the run settles at (default {target_frac})")
    p.add_argument("--alloc-conf", default=None,
                   help="set PYTORCH_CUDA_ALLOC_CONF before CUDA starts, e.g. expandable_segments:True")
    p.add_argument("--progress-s", type=float, default=2.0, help="seconds between progress lines (default 2)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-vw-torch", dest="vw_torch", action="store_false",
                   help="do not publish allocator figures through vramwatch_torch (on by default when importable)")
    p.add_argument("--dry-run", action="store_true",
                   help="CPU, tiny sizes, a few seconds: checks the program's logic; a simulated OOM ends the OOM shapes")
    return p


def speed_ok(speed):
    if not (0.05 <= speed <= 20):
        raise SystemExit(f"--speed {speed}: expected 0.05..20")


# --------------------------------------------------------------------------
# Pacing


class Pacer:
    """Ticks at `hz` (already multiplied by the speed). wait() sleeps until
    the next tick; a loop that falls behind catches up for at most `slack`
    seconds, then the schedule restarts from now (a slow step delays the
    plan instead of being followed by a burst)."""

    def __init__(self, hz, clock=time.monotonic, sleep=time.sleep, slack=0.5):
        if hz <= 0:
            raise ValueError("hz must be > 0")
        self.period = 1.0 / hz
        self._clock = clock
        self._sleep = sleep
        self.slack = slack
        self.next = clock()
        self.late = 0  # ticks that found the loop already behind

    def wait(self):
        self.next += self.period
        d = self.next - self._clock()
        if d > 0:
            self._sleep(d)
        else:
            self.late += 1
            if d < -self.slack:
                self.next = self._clock()


# --------------------------------------------------------------------------
# Fill planning (pure arithmetic; tested without torch)


def fill_bytes(avail, working, budget, total, slack=None):
    """Bytes to take up front so that `budget` bytes remain for growth.

    avail   -- memory this process can still get (driver free + its cache)
    working -- what the loop itself still needs beyond what it holds now
               (the transient peak of a step, an eval spike, ...)
    budget  -- bytes the growth may add before the OOM
    total   -- the GPU's memory (sizes the slack)
    Rounded down to 2 MiB; never negative."""
    if slack is None:
        slack = max(256 * MIB, int(0.002 * total))
    f = avail - working - budget - slack
    f = max(0, int(f))
    return f - f % (2 * MIB)


def fill_for_target(total, target_frac, used_now, working):
    """Bytes to take up front so the GPU settles at `target_frac` of `total`
    with `used_now` already in use (this process and the driver's share) and
    `working` still to come (transient peaks, caches that will fill)."""
    f = int(total * target_frac) - used_now - working
    f = max(0, f)
    return f - f % (2 * MIB)


def growth_budget(bytes_per_s_at_speed1, growth_s):
    return int(bytes_per_s_at_speed1 * growth_s)


# --------------------------------------------------------------------------
# The run: bookkeeping, progress, truth


class SimulatedOOM(Exception):
    """Stands in for torch.OutOfMemoryError in --dry-run on the CPU."""


class Terminated(Exception):
    """SIGTERM / SIGINT arrived: the runner's timeout or the two_proc launcher."""


class Run:
    def __init__(self, workload, args, expect, note=""):
        self.workload = workload
        self.args = args
        self.expect = expect  # "oom", "no_alarm" or "auto" (decided by what happened)
        self.note = note
        self.pid = os.getpid()
        self.start_ms = process_start_unix_ms() or _IMPORT_MS
        self.import_ms = _IMPORT_MS
        self.growth_start_ms = None
        self.growth_end_ms = None
        self.oom_ms = None
        self.oom_message = None
        self.oom_phase = None
        self.at_oom = None
        self.phase = "start"
        self.events = []
        self.events_dropped = 0
        self.plan = {}
        self.extra = {}
        self.torch = None
        self.dev = None
        self.dry = bool(getattr(args, "dry_run", False))
        self._last_progress = 0.0
        self._last_retry_check = 0.0
        self.alloc_retries = 0
        self.first_retry_ms = None
        self.step = 0
        self.sim_oom_at = None  # monotonic time of a simulated OOM (dry run)
        self.truth_path = args.truth or f"{workload}.truth.json"
        speed_ok(args.speed)
        if self.dry:
            # a few seconds on the CPU; the OOM shapes end with a simulated
            # OOM 2 s after their growth starts (the limit is only a backstop
            # for a slow machine)
            args.seconds = min(args.seconds, 30.0 if expect == "oom" else 8.0)
            args.progress_s = min(args.progress_s, 1.0)
        if args.alloc_conf:
            os.environ["PYTORCH_CUDA_ALLOC_CONF"] = args.alloc_conf
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    # -- setup

    def _on_signal(self, signum, frame):
        raise Terminated(signal.Signals(signum).name)

    def setup_torch(self):
        """Imports torch, picks the device, starts vramwatch_torch."""
        import torch  # noqa: PLC0415 (after PYTORCH_CUDA_ALLOC_CONF is set)

        self.torch = torch
        if self.dry:
            self.dev = torch.device("cpu")
            torch.manual_seed(self.args.seed)
        else:
            if not torch.cuda.is_available():
                raise SystemExit("CUDA is not available (use --dry-run to check the logic on the CPU)")
            torch.cuda.set_device(self.args.device)
            self.dev = torch.device("cuda", self.args.device)
            torch.manual_seed(self.args.seed)
            torch.cuda.init()
            torch.empty(1, device=self.dev)  # the context, now
            if self.args.vw_torch:
                self._start_vw_torch()
        self.event("cuda_ready")
        return torch, self.dev

    def _start_vw_torch(self):
        sys.path.insert(0, os.path.join(HERE, ".."))
        try:
            import vramwatch_torch  # noqa: PLC0415

            self._vw = vramwatch_torch if vramwatch_torch.start(interval=0.5) else None
        except Exception as e:  # never let the publisher break a run
            print(json.dumps({"kind": "warning", "msg": f"vramwatch_torch: {e}"}), flush=True)
            self._vw = None

    def vw_publish(self):
        vw = getattr(self, "_vw", None)
        if vw is not None:
            try:
                vw.publish_now()
            except Exception:
                pass

    # -- time

    def elapsed(self):
        return time.time() - self.start_ms / 1000.0

    def time_up(self):
        return self.elapsed() >= self.args.seconds

    def hz(self, base_hz):
        """A loop rate at this run's speed."""
        return base_hz * self.args.speed

    def pacer(self, base_hz):
        return Pacer(self.hz(base_hz))

    # -- memory figures

    def mem(self):
        t = self.torch
        if self.dry or t is None or self.dev is None:
            return {}
        free, total = t.cuda.mem_get_info(self.dev)
        return {
            "alloc_gib": gib(t.cuda.memory_allocated(self.dev)),
            "reserved_gib": gib(t.cuda.memory_reserved(self.dev)),
            "max_alloc_gib": gib(t.cuda.max_memory_allocated(self.dev)),
            "gpu_used_gib": gib(total - free),
            "gpu_total_gib": gib(total),
        }

    def alloc_stats(self):
        """Fragmentation figures of the caching allocator (for progress)."""
        t = self.torch
        if self.dry or t is None:
            return {}
        s = t.cuda.memory_stats(self.dev)
        return {
            "segments": s.get("segment.all.current", 0),
            "inactive_split_gib": gib(s.get("inactive_split_bytes.all.current", 0)),
            "alloc_retries": s.get("num_alloc_retries", 0),
        }

    # -- events and progress

    def event(self, name, /, **data):
        e = {"t": now_ms(), "event": name, **data}
        if len(self.events) < MAX_EVENTS:
            self.events.append(e)
        else:
            self.events_dropped += 1
        print(json.dumps({"kind": "event", "el": round(self.elapsed(), 2), **e}), flush=True)

    def _watch_retries(self):
        """The allocator's retries: the first is when the process could not
        get memory from the driver and had to free its cache to go on (the
        GPU was full for it) - worth knowing next to the OOM time."""
        t = self.torch
        if self.dry or t is None or self.dev is None:
            return
        n = t.cuda.memory_stats(self.dev).get("num_alloc_retries", 0)
        if n > self.alloc_retries:
            if self.first_retry_ms is None:
                self.first_retry_ms = now_ms()
                self.event("first_alloc_retry", phase=self.phase, step=self.step, retries=n)
            self.alloc_retries = n

    def set_phase(self, phase):
        self.phase = phase

    def mark_growth_start(self, **data):
        if self.growth_start_ms is None:
            self.growth_start_ms = now_ms()
            self.event("growth_start", **data)
            if self.dry and self.expect == "oom":
                self.sim_oom_at = time.monotonic() + 2.0

    def mark_growth_end(self, **data):
        if self.growth_end_ms is None:
            self.growth_end_ms = now_ms()
            self.event("growth_end", **data)

    def tick(self, step=None, force=False, stats=False, **extra):
        """Call once per step (or per chunk / request). Prints a progress line
        every --progress-s (with the allocator's fragmentation figures if
        stats); in a dry run raises the simulated OOM."""
        if step is not None:
            self.step = step
        if self.sim_oom_at is not None and time.monotonic() >= self.sim_oom_at:
            raise SimulatedOOM("simulated out-of-memory (dry run)")
        now = time.monotonic()
        if now - self._last_retry_check >= 0.25:
            self._last_retry_check = now
            self._watch_retries()
        if force or now - self._last_progress >= self.args.progress_s:
            self._last_progress = now
            line = {"kind": "progress", "t": now_ms(), "el": round(self.elapsed(), 2),
                    "step": self.step, "phase": self.phase, **self.mem(),
                    **(self.alloc_stats() if stats else {}), **extra}
            print(json.dumps(line), flush=True)

    # -- truth

    def truth(self, outcome, exit_code):
        t = self.torch
        expect = self.expect
        if expect == "auto":
            expect = "oom" if self.oom_ms is not None else "no_alarm"
        dev_info = {}
        if t is not None and not self.dry:
            try:
                props = t.cuda.get_device_properties(self.dev)
                uuid = str(getattr(props, "uuid", "") or "")
                dev_info = {"device_name": props.name, "device_total_bytes": props.total_memory,
                            # as NVML (and the recording) spell it
                            "device_uuid": (uuid if uuid.startswith("GPU-") else f"GPU-{uuid}") if uuid else None}
            except Exception:
                pass
        d = {
            "workload": self.workload,
            "variant": self.args.variant,
            "speed": self.args.speed,
            "device": self.args.device,
            **dev_info,
            "pids": [self.pid],
            "pid": self.pid,
            "start_unix_ms": self.start_ms,
            "python_start_unix_ms": self.import_ms,
            "growth_start_unix_ms": self.growth_start_ms,
            "growth_end_unix_ms": self.growth_end_ms,
            "oom_unix_ms": self.oom_ms,
            "oom_pid": self.pid if self.oom_ms is not None else None,
            "oom_phase": self.oom_phase,
            "first_alloc_retry_unix_ms": self.first_retry_ms,
            "oom_message": self.oom_message,
            "at_oom": self.at_oom,
            "expect": expect,
            "outcome": outcome,
            "exit_code": exit_code,
            "end_unix_ms": now_ms(),
            "note": self.note,
            "plan": self.plan,
            **self.extra,
            "events": self.events,
            "events_dropped": self.events_dropped,
            "args": {k: v for k, v in vars(self.args).items()},
            "env": {k: os.environ.get(k) for k in ("PYTORCH_CUDA_ALLOC_CONF", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")},
            "torch": getattr(t, "__version__", None),
            "host": socket.gethostname(),
            "dry_run": self.dry,
        }
        return d

    def write_truth(self, outcome, exit_code):
        d = self.truth(outcome, exit_code)
        write_json(self.truth_path, d)
        print(json.dumps({"kind": "truth", **{k: v for k, v in d.items() if k != "events"}}), flush=True)
        return d


def write_json(path, d):
    tmp = f"{path}.tmp{os.getpid()}"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(tmp, "w") as f:
        json.dump(d, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def execute(run, body):
    """Runs body(run) and turns what happened into the truth file and the exit
    status: 0 completed (no OOM expected), 3 OOM, 4 expected OOM that never
    came, 5 terminated by a signal, 1 error. On OOM the time is taken in the
    handler, the body's tensors are freed (its frames go with the
    exception), the cache is returned to the driver, then the truth is
    written and the process exits."""
    outcome, code = None, EXIT_ERROR
    oom_types = (SimulatedOOM,)
    torch = None
    try:
        import torch  # noqa: PLC0415

        oom_types = (torch.OutOfMemoryError, SimulatedOOM)
    except ImportError:
        pass
    try:
        body(run)
        if run.expect == "oom":
            outcome, code = "no_oom_before_deadline", EXIT_NO_OOM
        else:
            outcome, code = "completed", EXIT_OK
    except oom_types as e:
        run.oom_ms = now_ms()
        run.oom_phase = run.phase
        run.oom_message = str(e).strip().splitlines()[0][:400] if str(e).strip() else type(e).__name__
        try:
            run.at_oom = run.mem() | run.alloc_stats()
        except Exception:
            run.at_oom = None
        run.vw_publish()
        run.event("oom", phase=run.phase, step=run.step)
        outcome, code = "oom", EXIT_OOM
    except RuntimeError as e:
        # an out-of-memory outside the caching allocator (a library's own
        # cudaMalloc): still an OOM, marked as such
        if "out of memory" not in str(e).lower():
            traceback.print_exc()
            outcome, code = "error", EXIT_ERROR
        else:
            run.oom_ms = now_ms()
            run.oom_phase = run.phase
            run.oom_message = "RuntimeError: " + str(e).strip().splitlines()[0][:400]
            run.extra["oom_kind"] = "runtime_error"
            run.vw_publish()
            run.event("oom", phase=run.phase, step=run.step, oom_kind="runtime_error")
            outcome, code = "oom", EXIT_OOM
    except Terminated as e:
        outcome, code = f"terminated_{e}", EXIT_TERMINATED
        run.event("terminated", signal=str(e))
    except Exception:
        traceback.print_exc()
        outcome, code = "error", EXIT_ERROR
    # The exception (and with it the body's frames and tensors) is gone here.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.collect()
    if torch is not None and not run.dry and run.dev is not None:
        try:
            torch.cuda.synchronize(run.dev)
            torch.cuda.empty_cache()
        except Exception:
            pass
    run.write_truth(outcome, code)
    sys.stdout.flush()
    return code


def main_for(run, body):
    sys.exit(execute(run, body))


# --------------------------------------------------------------------------
# torch helpers (import torch lazily: they run after Run.setup_torch)


def sync(run):
    if not run.dry:
        run.torch.cuda.synchronize(run.dev)


def measure_peak(run, fn):
    """Runs fn() and returns (result, peak allocated above the level before,
    allocated after minus before). On the CPU: (result, 0, 0)."""
    t = run.torch
    if run.dry:
        return fn(), 0, 0
    sync(run)
    before = t.cuda.memory_allocated(run.dev)
    t.cuda.reset_peak_memory_stats(run.dev)
    out = fn()
    sync(run)
    peak = t.cuda.max_memory_allocated(run.dev) - before
    after = t.cuda.memory_allocated(run.dev) - before
    return out, peak, after


def reserved(run):
    return 0 if run.dry else run.torch.cuda.memory_reserved(run.dev)


def avail_bytes(run, empty_cache=True):
    """(memory this process can still take, GPU total). Empties the cache
    first so the answer is the driver's free memory."""
    t = run.torch
    if run.dry:
        return 8 * GIB, 16 * GIB
    sync(run)
    if empty_cache:
        t.cuda.empty_cache()
    free, total = t.cuda.mem_get_info(run.dev)
    cached = t.cuda.memory_reserved(run.dev) - t.cuda.memory_allocated(run.dev)
    return free + cached, total


def planned_fill(run, *, working, budget_bps, note=""):
    """The fill for an OOM shape: --fill-gib if given, else what leaves
    --headroom-gib, else growth of budget_bps (bytes/s at speed 1) for
    --growth-s seconds, above `working` (the loop's own transient needs)."""
    a = run.args
    avail, total = avail_bytes(run)
    if run.dry:
        f = 0
        budget = 0
    elif a.fill_gib is not None:
        f = int(a.fill_gib * GIB)
        budget = None
    else:
        if getattr(a, "headroom_gib", None) is not None:
            budget = int(a.headroom_gib * GIB)
        else:
            budget = growth_budget(budget_bps, a.growth_s)
        f = fill_bytes(avail, working, budget, total)
    run.plan.update({
        "avail_bytes": avail, "total_bytes": total, "working_bytes": int(working),
        "budget_bytes": budget, "budget_bps_speed1": int(budget_bps) if budget_bps else None,
        "growth_s_speed1": getattr(a, "growth_s", None), "fill_bytes": f,
        "planned_oom_after_growth_start_s": (a.growth_s / a.speed) if (budget is not None and getattr(a, "headroom_gib", None) is None and getattr(a, "growth_s", None)) else None,
        "note": note,
    })
    return f


def target_fill(run, *, working, note=""):
    """The fill for a no-alarm shape: what makes the GPU settle at
    --target-frac with `working` still to come."""
    a = run.args
    if run.dry:
        f = 0
        total = 16 * GIB
        used = 0
    else:
        avail, total = avail_bytes(run)
        used = total - avail
        f = int(a.fill_gib * GIB) if a.fill_gib is not None else fill_for_target(total, a.target_frac, used, working)
    run.plan.update({"total_bytes": total, "used_before_fill_bytes": used, "working_bytes": int(working),
                     "target_frac": a.target_frac, "fill_bytes": f, "note": note})
    return f


class GpuCorpus:
    """A token data set resident on the GPU (int32), loaded in chunks at a
    given rate: the 'fill'. Training loops draw their batches from it."""

    def __init__(self, run, nbytes, vocab, *, gbps=50.0, chunk_bytes=GIB, label="corpus", jitter=0.0, staging=None):
        t = run.torch
        self.vocab = vocab
        self.chunks = []
        self.rng = random.Random(run.args.seed + 17)
        nbytes = max(0, int(nbytes))
        if run.dry:
            nbytes = min(nbytes, 4 * MIB) or 4 * MIB
            chunk_bytes = MIB
        run.event(f"{label}_load_start", bytes=nbytes, gbps=gbps)
        t0 = time.monotonic()
        done = 0
        due = 0.0  # seconds after t0 at which the chunks so far should be in
        while done < nbytes:
            n = min(chunk_bytes, nbytes - done)
            n -= n % 4
            if n <= 0:
                break
            if staging is not None:
                # From pinned host memory, like a real loader.
                c = t.empty(n // 4, dtype=t.int32, device=run.dev)
                src = staging[: n // 4]
                c.copy_(src, non_blocking=True)
                c.remainder_(vocab)
            else:
                c = t.randint(0, vocab, (n // 4,), dtype=t.int32, device=run.dev)
            self.chunks.append(c)
            done += n
            # hold the rate (with optional jitter: shards of uneven speed)
            due += n / (gbps * 1e9) * (1.0 + (self.rng.uniform(-jitter, jitter) if jitter else 0.0))
            d = t0 + due - time.monotonic()
            if d > 0:
                time.sleep(d)
            run.tick()
        sync(run)
        self.nbytes = done
        run.event(f"{label}_load_done", bytes=done, seconds=round(time.monotonic() - t0, 2))

    def batch(self, B, T):
        c = self.chunks[self.rng.randrange(len(self.chunks))]
        need = B * (T + 1)
        if c.numel() < need:  # tiny dry-run chunks
            reps = need // c.numel() + 1
            c = c.repeat(reps)
        o = self.rng.randrange(0, c.numel() - need + 1)
        xy = c[o : o + need].view(B, T + 1).long()
        return xy[:, :-1], xy[:, 1:]


def load_weights(run, model, *, gbps, staging_bytes=256 * MIB, label="weights", mark_growth=False):
    """Materializes a model built on the meta device onto the GPU one
    parameter at a time, each copied from a pinned host staging buffer, at
    about `gbps` GB/s: what a checkpoint loader does (a fast ramp).
    Tied parameters are loaded once. Returns the model."""
    t = run.torch
    nstage = (staging_bytes if not run.dry else MIB) // 2
    staging = t.empty(nstage, dtype=t.bfloat16, pin_memory=not run.dry)
    staging.copy_(t.randn(nstage, dtype=t.bfloat16, device=run.dev).mul_(0.02))  # stands in for file contents
    if not run.dry:
        t.cuda.synchronize(run.dev)
        t.cuda.empty_cache()
    done = {}
    total = sum(p.numel() * p.element_size() for p in {id(p): p for p in model.parameters()}.values())
    run.event(f"{label}_load_start", bytes=total, gbps=gbps)
    if mark_growth:
        run.mark_growth_start(what=f"{label}_load", bytes=total)
    t0 = time.monotonic()
    loaded = 0
    for mod in model.modules():
        for name, p in list(mod._parameters.items()):
            if p is None:
                continue
            if id(p) in done:
                mod._parameters[name] = done[id(p)]
                continue
            w = t.empty(p.shape, dtype=p.dtype, device=run.dev)
            flat = w.view(-1)
            for off in range(0, flat.numel(), nstage):
                n = min(nstage, flat.numel() - off)
                flat[off : off + n].copy_(staging[:n].to(p.dtype), non_blocking=True)
            newp = t.nn.Parameter(w, requires_grad=p.requires_grad)
            mod._parameters[name] = newp
            done[id(p)] = newp
            loaded += w.numel() * w.element_size()
            d = t0 + loaded / (gbps * 1e9) - time.monotonic()
            if d > 0:
                time.sleep(d)
            run.tick()
        for name, b in list(mod._buffers.items()):
            if b is not None and b.device.type == "meta":
                mod._buffers[name] = t.zeros(b.shape, dtype=b.dtype, device=run.dev)
    sync(run)
    run.event(f"{label}_load_done", bytes=loaded, seconds=round(time.monotonic() - t0, 2))
    return model


def build_gpt(run, *, vocab, d, layers, heads, max_t, dtype="bf16", mlp=4, causal=True):
    """A GPT built directly on the device (no CPU copy), bf16 or fp32."""
    from nets import GPT  # noqa: PLC0415

    t = run.torch
    dt = {"bf16": t.bfloat16, "fp32": t.float32}[dtype]
    with t.device(run.dev):
        m = GPT(vocab=vocab, d=d, layers=layers, heads=heads, max_t=max_t, mlp=mlp, causal=causal)
    return m.to(dt)


def param_bytes(model):
    return sum(p.numel() * p.element_size() for p in model.parameters())


def dry_dims(run, **full):
    """In a dry run, shrink every size to something a CPU does in
    milliseconds; else return the sizes unchanged."""
    if not run.dry:
        return full
    small = {}
    for k, v in full.items():
        if k in ("vocab",):
            small[k] = 256
        elif k in ("d",):
            small[k] = 64
        elif k in ("layers",):
            small[k] = 2
        elif k in ("heads",):
            small[k] = 4
        elif k in ("T", "max_t"):
            small[k] = min(v, 32) if k == "T" else 512
        elif k in ("B",):
            small[k] = min(v, 2)
        else:
            small[k] = v
    return small


def ceil_div(a, b):
    return -(-a // b)


def fmt_s(x):
    return None if x is None else round(x, 1)


__all__ = [n for n in dir() if not n.startswith("_")] + ["math"]

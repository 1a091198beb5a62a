"""fragment: varying tensor shapes make the caching allocator's reserved
memory grow much faster than what the tensors use, until OOM.

A deep bf16 GPT (16 layers, d 1024) trained with dynamic batching: each
step packs however many sequences have arrived, so the batch size changes
every step (B = base + a random 0..--jitter), and the base creeps up by one
sequence every --drift-every steps as the queue grows. This is the case the
PyTorch documentation gives for expandable_segments: a step at B+1 needs
blocks slightly bigger than those cached from the steps at B; some requests
are carved out of bigger cached blocks, leaving slivers at the ends of
segments that nothing else fits, and new segments are asked for the rest.
Reserved memory (what the driver, nvidia-smi and vramwatch see) climbs and
sits near the top while allocated memory (the step's real peak) only
creeps; the allocator frees whole unused segments and retries, but the
slivers inside segments in use stay, so the OOM comes before the tensors
alone would fill the GPU.

variant default      the default allocator
variant expandable   PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (set
                     before CUDA starts): segments grow in place and free
                     pages are returned, so reserved tracks allocated far
                     more closely and the OOM (if any) comes later, when the
                     creeping peak itself no longer fits.

The fill (a GPU-resident data set) leaves room for the starting peak (at
the top of the jitter) plus the creep of --growth-s seconds at speed 1:
about 3.4 GiB, so the GPU is ~97 % reserved from the first steps on and
the allocator is freeing its cache and retrying from then on. The
expandable variant is planned to OOM when the creeping peak no longer fits,
about --growth-s s after training starts (it came ~1.2x later than planned
on an H200); the default allocator loses a few GiB to slivers and OOMs
earlier, by an amount the run measures: on an H200, 20 s after the start
of training with the peak still ~2 GiB short of the top, against 50 s with
expandable segments (--growth-s 48; 10 s against 47 s with --growth-s 40).

Ground truth: growth_start = the first step after the fill; the OOM is
torch.OutOfMemoryError inside a step; expect is "oom" when one happened,
"no_alarm" when --seconds ran out first (decided by the outcome, since the
expandable variant may not OOM at all). Progress lines carry the
allocator's segment count, inactive split bytes and retries.
"""

import common as C


def main():
    p = C.base_parser("fragment", __doc__, seconds=150, variants=["default", "expandable"], growth_s=48)
    p.add_argument("--batch", type=int, default=48, help="starting base batch")
    p.add_argument("--jitter", type=int, default=8, help="random extra sequences per step (0..jitter)")
    p.add_argument("--drift-every", type=int, default=25, help="steps per +1 on the base batch (0: no drift)")
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--hz", type=float, default=5.0)
    p.add_argument("--layers", type=int, default=16)
    args = p.parse_args()
    if args.variant == "expandable" and not args.alloc_conf:
        args.alloc_conf = "expandable_segments:True"
    run = C.Run("fragment", args, expect="auto",
                note=f"dynamic batch size (jitter {args.jitter}, +1 every {args.drift_every} steps); allocator: "
                     + (args.alloc_conf or "default"))
    C.main_for(run, body)


def body(run):
    import random
    import time

    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=16384, d=1024, layers=a.layers, heads=16, max_t=1024, B=a.batch, T=a.seq)
    V, B0, T = z["vocab"], z["B"], z["T"]
    rng = random.Random(a.seed)
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=z["d"], layers=z["layers"], heads=z["heads"], max_t=z["max_t"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def train_step(x, y):
        loss = lm_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    def rand_step(B):
        xy = torch.randint(0, V, (B, T + 1), device=dev)
        return train_step(xy[:, :-1], xy[:, 1:])

    def batch_size(step):
        base = B0 + (step // a.drift_every if a.drift_every else 0)
        return base + rng.randint(0, a.jitter)

    run.set_phase("warmup")
    rand_step(B0)
    _, peak0, _ = C.measure_peak(run, lambda: rand_step(B0))
    _, peak1, _ = C.measure_peak(run, lambda: rand_step(B0 + a.jitter))
    per_seq = max(1, (peak1 - peak0) // max(1, a.jitter)) if not run.dry else 1
    drift_per_s = (a.hz / a.drift_every) if a.drift_every else 0.0
    run.plan.update({"peak_at_start_bytes": peak0, "peak_per_sequence_bytes": per_seq,
                     "base_increase_per_s_speed1": drift_per_s})
    fill = C.planned_fill(run, working=peak1, budget_bps=per_seq * drift_per_s,
                          note="GPU-resident token data set; budget = creep of the tensors' peak (no allowance for fragmentation)")
    run.set_phase("load_data")
    corpus = C.GpuCorpus(run, fill, V)

    run.set_phase("train")
    pacer = run.pacer(a.hz)
    step = 0
    run.mark_growth_start(peak_bytes_per_s=int(per_seq * drift_per_s * a.speed))
    if run.dry and a.variant == "default":
        run.sim_oom_at = time.monotonic() + 2.0  # the OOM path, on the CPU
    while not run.time_up():
        B = batch_size(step)
        x, y = corpus.batch(B, T)
        loss = train_step(x, y)
        step += 1
        run.tick(step, stats=True, B=B, **({"loss": round(loss.item(), 4)} if step % 25 == 0 else {}))
        pacer.wait()


if __name__ == "__main__":
    main()

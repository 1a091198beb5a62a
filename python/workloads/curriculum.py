"""curriculum: a bf16 GPT training loop whose batch grows on a schedule.

variant batch (default)
    Batch-size warm-up that never stops (GPT-3 style, with a bad end):
        B = B0 + step // grow_every
    One more sequence every --grow-every steps (1 s at speed 1).

variant seqlen
    Sequence-length warm-up: T = T0 + 64 * (step // grow_every).

Each step's activations (and the fp32 logits of the loss) grow with B x T,
so the step's peak grows in steps; the caching allocator keeps the smaller
blocks it had and asks the driver for bigger ones, so what nvidia-smi shows
(reserved) climbs ahead of the peak and stays near the top for a while
(the allocator frees its cache and retries) before the real OOM.

The per-sequence (per-64-token) cost is measured in a warm-up at two sizes,
the cache is emptied, and a GPU-resident token data set is loaded (the fill)
so that at speed 1 the OOM comes about --growth-s seconds after the ramp
starts.

Ground truth: growth starts at the first step of the ramp; the OOM is
torch.OutOfMemoryError in the forward or backward of the first step whose
batch does not fit.
"""

import common as C


def main():
    p = C.base_parser("curriculum", __doc__, seconds=150, variants=["batch", "seqlen"], growth_s=45)
    p.add_argument("--batch", type=int, default=8, help="starting batch (B0)")
    p.add_argument("--seq", type=int, default=512, help="starting sequence length (T0)")
    p.add_argument("--hz", type=float, default=5.0, help="steps per second at speed 1")
    p.add_argument("--grow-every", type=int, default=5, help="steps between increases")
    p.add_argument("--seq-step", type=int, default=64, help="seqlen: tokens added per increase")
    args = p.parse_args()
    run = C.Run("curriculum", args, expect="oom",
                note=f"{args.variant} curriculum grows every {args.grow_every} steps until the step no longer fits")
    C.main_for(run, body)


def body(run):
    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=768, layers=8, heads=12, max_t=16384, B=a.batch, T=a.seq)
    V, B0, T0 = z["vocab"], z["B"], z["T"]
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=z["d"], layers=z["layers"], heads=z["heads"], max_t=z["max_t"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def shape(step):
        k = step // a.grow_every
        if a.variant == "batch":
            return B0 + k, T0
        return B0, T0 + a.seq_step * k

    def train_step(x, y):
        loss = lm_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    def rand_step(B, T):
        xy = torch.randint(0, V, (B, T + 1), device=dev)
        return train_step(xy[:, :-1], xy[:, 1:])

    run.set_phase("warmup")
    for _ in range(2):
        rand_step(B0, T0)
    _, peak0, _ = C.measure_peak(run, lambda: rand_step(B0, T0))
    # the cost of one increase, from a step at twice the size
    k2 = B0 if a.variant == "batch" else max(1, T0 // a.seq_step)
    B2, T2 = shape(k2 * a.grow_every)
    _, peak2, _ = C.measure_peak(run, lambda: rand_step(B2, T2))
    per_unit = max(1, (peak2 - peak0) // k2) if not run.dry else 1
    units_per_s = a.hz / a.grow_every
    run.plan.update({"peak_at_start_bytes": peak0, "peak_per_increase_bytes": per_unit,
                     "increases_per_s_speed1": units_per_s})
    fill = C.planned_fill(run, working=peak0, budget_bps=per_unit * units_per_s,
                          note="GPU-resident token data set; budget = step-peak growth")
    run.set_phase("load_data")
    corpus = C.GpuCorpus(run, fill, V)

    run.set_phase("train")
    pacer = run.pacer(a.hz)
    step = 0
    run.mark_growth_start(peak_bytes_per_s=int(per_unit * units_per_s * a.speed))
    last = None
    while not run.time_up():
        B, T = shape(step)
        if (B, T) != last:
            last = (B, T)
            run.extra["last_shape"] = {"B": B, "T": T}
            if step % (a.grow_every * 10) == 0:
                run.event("shape", B=B, T=T, step=step)
        x, y = corpus.batch(B, T)
        loss = train_step(x, y)
        step += 1
        run.tick(step, B=B, T=T, **({"loss": round(loss.item(), 4)} if step % 25 == 0 else {}))
        pacer.wait()


if __name__ == "__main__":
    main()

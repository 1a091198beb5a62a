"""healthy_train: warm-up growth, then flat training. Must not alarm.

A bf16 GPT training loop (5 steps/s at speed 1) that draws its batches from
a GPU-resident token data set, with a sequence-length warm-up: T goes from
--seq-start to --seq linearly over --warmup-s seconds (at speed 1), in
buckets of --bucket tokens, then stays. Each longer step needs a bigger activation peak, so memory climbs
for the warm-up and then stays flat; a validation pass under
torch.no_grad() every --eval-every-s seconds adds a small bump that the
allocator's cache mostly absorbs.

The data set (the fill) is sized so that, once the warm-up is over, the GPU
sits at --target-frac of its memory (a rehearsal of the warm-up's lengths
before the data set is loaded measures what the allocator will reserve for
them, which is well above one step's peak): a naive forecaster that extrapolates
the warm-up would call an OOM that never comes.

Ground truth: expect "no_alarm"; growth_start/growth_end bracket the
warm-up (bounded growth, not a leak); no OOM.
"""

import common as C


def main():
    p = C.base_parser("healthy_train", __doc__, seconds=90, variants=["default"], target_frac=0.8)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq-start", type=int, default=256)
    p.add_argument("--seq", type=int, default=2048)
    p.add_argument("--warmup-s", type=float, default=15.0, help="length of the warm-up at speed 1")
    p.add_argument("--bucket", type=int, default=256, help="sequence lengths are multiples of this")
    p.add_argument("--hz", type=float, default=5.0)
    p.add_argument("--eval-every-s", type=float, default=20.0)
    p.add_argument("--val-batches", type=int, default=8)
    args = p.parse_args()
    run = C.Run("healthy_train", args, expect="no_alarm",
                note="sequence-length warm-up then flat training at the target share of the GPU")
    C.main_for(run, body)


def body(run):
    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=1024, layers=8, heads=16, max_t=4096, B=a.batch, T=a.seq)
    V, B, T_hi = z["vocab"], z["B"], z["T"]
    T_lo = min(a.seq_start, T_hi)
    warm_steps = max(1, round(a.warmup_s * a.hz))
    eval_every = max(1, round(a.eval_every_s * a.hz))
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=z["d"], layers=z["layers"], heads=z["heads"], max_t=z["max_t"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def seq_len(step):
        """Linear warm-up in buckets of --bucket tokens."""
        if step >= warm_steps:
            return T_hi
        t = T_lo + (T_hi - T_lo) * step / warm_steps
        return max(T_lo, int(t) // a.bucket * a.bucket)

    def train_step(x, y):
        loss = lm_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    def rand_step(T):
        xy = torch.randint(0, V, (B, T + 1), device=dev)
        return train_step(xy[:, :-1], xy[:, 1:])

    # A dress rehearsal of the warm-up (a few steps from short to full
    # length), to learn what the warm-up will reserve: the allocator keeps
    # the blocks of every length it saw, so that is well above one step's
    # peak. Then the cache is given back and the data set sized from it.
    run.set_phase("probe")
    rand_step(T_lo)
    base = C.reserved(run)
    for T in sorted({seq_len(s) for s in range(warm_steps + 1)}):
        rand_step(T)
    warm_reserved = C.reserved(run) - base
    _, peak_hi, _ = C.measure_peak(run, lambda: rand_step(T_hi))
    run.plan.update({"warmup_reserved_bytes": warm_reserved, "step_peak_bytes": peak_hi})
    fill = C.target_fill(run, working=int(max(warm_reserved, peak_hi) * 1.1), note="GPU-resident token data set")
    run.set_phase("load_data")
    corpus = C.GpuCorpus(run, fill, V)

    run.set_phase("train")
    pacer = run.pacer(a.hz)
    step = 0
    run.mark_growth_start(what="seqlen_warmup", seconds=a.warmup_s / a.speed)
    while not run.time_up():
        T = seq_len(step)
        x, y = corpus.batch(B, T)
        loss = train_step(x, y)
        step += 1
        if step == warm_steps:
            run.mark_growth_end(T=T)
        if step % eval_every == 0:
            run.set_phase("eval")
            model.eval()
            with torch.no_grad():
                vl = sum(lm_loss(model(xv), yv) for xv, yv in (corpus.batch(B, T) for _ in range(a.val_batches)))
            model.train()
            run.event("eval", step=step, val_loss=round(float(vl) / a.val_batches, 3))
            run.set_phase("train")
        run.tick(step, T=T, **({"loss": round(loss.item(), 4)} if step % 25 == 0 else {}))
        pacer.wait()


if __name__ == "__main__":
    main()

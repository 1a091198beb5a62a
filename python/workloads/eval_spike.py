"""eval_spike: slow growth in training, a big spike at every validation; the
OOM comes during a validation pass.

Training (bf16 GPT, 5 steps/s at speed 1) keeps the logits of every
--keep-every-th step "for a train-accuracy curve":
    if step % keep_every == 0: train_logits.append(logits.detach())
That is the slow growth (B x T x vocab bf16 each time).

Every --eval-every-s seconds of training (counted in steps) a validation
pass runs under torch.no_grad() over --val-batches batches, keeping every
batch's fp32 logits to compute metrics over the whole set, then
concatenating them:
    outs.append(model(xv).float()); ...; allv = torch.cat(outs)
    val_loss = F.cross_entropy(allv.view(-1, V), allt.view(-1))
so the pass holds the kept logits, then twice that during the cat, then the
cross entropy's fp32 log-softmax next to the concatenation: the spike. Afterwards everything is dropped, and:

variant empty_cache (default)
    torch.cuda.empty_cache() after each validation ("give the memory back
    before training goes on"), so the driver (nvidia-smi, vramwatch) sees
    every spike come and go.
variant cached
    no empty_cache: the allocator keeps the spike's blocks cached, so the
    driver sees one step up at the first validation and then only the
    growth; the later validations reuse the cache (the leak's allocations
    get carved out of it, too).

A sanity validation before training measures the spike (as Lightning's
sanity check does; the spike is its peak allocation above a training
step's), the cache is emptied, and a GPU-resident data set (the
fill) is loaded so that validation number --oom-eval (counted from the
first after training starts) is the first that does not fit: the room left
for it is its spike minus half the growth between two validations, and the
one before it had half that growth to spare. Training alone never comes
near the top as long as the spike is bigger than the growth between two
validations (checked; see plan in the truth file).

Ground truth: growth starts at the first training step; the OOM is
torch.OutOfMemoryError in the validation pass (oom_phase "eval").
"""

import common as C


def main():
    p = C.base_parser("eval_spike", __doc__, seconds=150, variants=["empty_cache", "cached"], growth_s=None)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--hz", type=float, default=5.0, help="training steps per second at speed 1")
    p.add_argument("--keep-every", type=int, default=2, help="keep the logits of every N-th step (the slow growth)")
    p.add_argument("--eval-every-s", type=float, default=10.0, help="seconds of training (at speed 1) between validations")
    p.add_argument("--val-batches", type=int, default=16)
    p.add_argument("--val-batch", type=int, default=4)
    p.add_argument("--val-hz", type=float, default=8.0, help="validation batches per second at speed 1 (loader-bound)")
    p.add_argument("--oom-eval", type=int, default=4, help="the validation (1 = first after training starts) planned to OOM")
    args = p.parse_args()
    run = C.Run("eval_spike", args, expect="oom",
                note="slow growth (kept train logits) + validation spike (kept fp32 val logits + cat)"
                     + (", empty_cache() after each validation" if args.variant == "empty_cache" else ", cache kept")
                     + "; OOM planned in a validation")
    C.main_for(run, body)


def body(run):
    import time

    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=1024, layers=8, heads=16, max_t=1024, B=a.batch, T=a.seq)
    V, B, T = z["vocab"], z["B"], z["T"]
    Bv = min(a.val_batch, B) if run.dry else a.val_batch
    eval_every = max(1, round(a.eval_every_s * a.hz))
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=z["d"], layers=z["layers"], heads=z["heads"], max_t=z["max_t"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def rand_batch(b):
        xy = torch.randint(0, V, (b, T + 1), device=dev)
        return xy[:, :-1], xy[:, 1:]

    def train_step(x, y):
        logits = model(x)
        loss = lm_loss(logits, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return logits, loss

    def validate(batches, pacer=None):
        """Loss and accuracy over the whole validation set, computed at the
        end from every batch's kept logits."""
        model.eval()
        outs, tgts = [], []
        with torch.no_grad():
            for xv, yv in batches():
                outs.append(model(xv).float())
                tgts.append(yv)
                run.tick()
                if pacer is not None:
                    pacer.wait()
            allv = torch.cat(outs)
            allt = torch.cat(tgts)
            del outs, tgts
            val_loss = torch.nn.functional.cross_entropy(allv.view(-1, allv.shape[-1]), allt.view(-1))
            acc = (allv.argmax(-1) == allt).float().mean()
        model.train()
        return float(val_loss), float(acc)

    run.set_phase("warmup")
    for _ in range(3):
        train_step(*rand_batch(B))
    (_, step_peak, _) = C.measure_peak(run, lambda: train_step(*rand_batch(B)))
    # sanity validation: the spike, measured (peak allocated above the level
    # between steps); what it needs beyond a training step's own peak is
    # what each validation has to find on top of the training's memory
    run.set_phase("sanity_eval")
    _, eval_peak, _ = C.measure_peak(run, lambda: validate(lambda: (rand_batch(Bv) for _ in range(a.val_batches))))
    spike = max(0, eval_peak - step_peak)
    keep_bytes = B * T * V * 2
    per_period = keep_bytes * (eval_every // a.keep_every)
    budget = spike + int((a.oom_eval - 0.5) * per_period)
    ok = spike > per_period
    run.plan.update({"step_peak_bytes": step_peak, "eval_peak_bytes": eval_peak, "eval_spike_bytes": spike, "keep_bytes": keep_bytes,
                     "growth_per_eval_period_bytes": per_period, "eval_every_steps": eval_every,
                     "spike_exceeds_period_growth": ok,
                     "planned_oom_eval": a.oom_eval,
                     "planned_oom_after_growth_start_s": a.oom_eval * eval_every / run.hz(a.hz)})
    if not ok and not run.dry:
        run.event("warning", msg="spike not larger than the growth per period: the OOM may come in training")
    # the fill leaves: a step's peak + the planned budget (spike + growth before eval k)
    avail, total = C.avail_bytes(run)
    if run.dry:
        fill = 0
    elif a.fill_gib is not None:
        fill = int(a.fill_gib * C.GIB)
    else:
        fill = C.fill_bytes(avail, step_peak, budget, total)
    run.plan.update({"avail_bytes": avail, "total_bytes": total, "budget_bytes": budget, "fill_bytes": fill})
    run.set_phase("load_data")
    corpus = C.GpuCorpus(run, fill, V)

    run.set_phase("train")
    pacer = run.pacer(a.hz)
    train_logits = []  # the slow growth
    step = 0
    n_eval = 0
    run.mark_growth_start(growth_bytes_per_s=int(keep_bytes * run.hz(a.hz) / a.keep_every))
    while not run.time_up():
        x, y = corpus.batch(B, T)
        logits, loss = train_step(x, y)
        if step % a.keep_every == 0:
            train_logits.append(logits.detach())
        del logits
        step += 1
        run.tick(step, kept=len(train_logits))
        if step % eval_every == 0:
            n_eval += 1
            run.set_phase("eval")
            run.event("eval_start", n=n_eval, step=step)
            t0 = time.monotonic()
            val_loss, acc = validate(lambda: (corpus.batch(Bv, T) for _ in range(a.val_batches)), run.pacer(a.val_hz))
            if a.variant == "empty_cache" and not run.dry:
                torch.cuda.empty_cache()  # "give the validation memory back before training goes on"
            run.event("eval_end", n=n_eval, seconds=round(time.monotonic() - t0, 2), val_loss=round(val_loss, 3))
            run.set_phase("train")
            pacer = run.pacer(a.hz)  # the loader restarts after validation
        pacer.wait()


if __name__ == "__main__":
    main()

"""empty_cache_saw: torch.cuda.empty_cache() every window makes a sawtooth at
the driver level while the base grows, until OOM.

A bf16 GPT training loop (5 steps/s at speed 1) with two habits:

* A windowed calibration metric: every step's logits are kept in a list
  (window.append(logits.detach())); every --window steps (8 s at speed 1)
  they are concatenated, the metric is computed, the list is cleared, and
  torch.cuda.empty_cache() is called "to give the memory back". Allocated
  memory ramps up over the window and drops; because of empty_cache the
  reserved memory (what the driver, nvidia-smi and vramwatch see) drops
  with it: a sawtooth.
* Activation statistics: forward hooks on the MLPs of --hook-layers layers
  keep their outputs on the GPU "to plot histograms later"
  (acts.append(out.detach())). That is the base that grows.

Segments that a kept activation shares with freed window memory cannot be
given back by empty_cache, so the troughs also climb a little faster than
the allocated base (fragmentation) - that is part of the shape.

The fill (a GPU-resident data set) is planned so that at speed 1 the base
growth fills the room left above the window's peak in about --growth-s s.

Ground truth: growth starts at the first step after the fill; the OOM is
torch.OutOfMemoryError, typically near a window's top (phase "train") or in
its concatenation (phase "metric").
"""

import common as C


def main():
    p = C.base_parser("empty_cache_saw", __doc__, seconds=150, variants=["default"], growth_s=45)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--hz", type=float, default=5.0, help="steps per second at speed 1")
    p.add_argument("--window", type=int, default=40, help="steps per metric window (then empty_cache)")
    p.add_argument("--hook-layers", type=int, default=4, help="layers whose MLP activations are kept (the base growth)")
    args = p.parse_args()
    run = C.Run("empty_cache_saw", args, expect="oom",
                note="window of kept logits cleared + empty_cache() every window (sawtooth); kept hook activations (base growth)")
    C.main_for(run, body)


def body(run):
    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=1024, layers=8, heads=16, max_t=1024, B=a.batch, T=a.seq)
    V, B, T, d = z["vocab"], z["B"], z["T"], z["d"]
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=d, layers=z["layers"], heads=z["heads"], max_t=z["max_t"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    acts = []  # the base growth
    recording = [False]

    def keep_activation(module, inputs, out):
        if recording[0]:
            acts.append(out.detach())

    for blk in list(model.blocks)[: a.hook_layers]:
        blk.fc1.register_forward_hook(keep_activation)

    def train_step(x, y):
        logits = model(x)
        loss = lm_loss(logits, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return logits, loss

    def calibration_error(window):
        """Expected calibration error over the window (15 bins)."""
        allv = torch.cat(window)
        conf = (allv.amax(-1).float() - torch.logsumexp(allv, -1).float()).exp().flatten()
        bins = (conf * 15).long().clamp_(max=14)
        return float(torch.bincount(bins, minlength=15).float().std())

    def rand_batch():
        xy = torch.randint(0, V, (B, T + 1), device=dev)
        return xy[:, :-1], xy[:, 1:]

    run.set_phase("warmup")
    for _ in range(3):
        train_step(*rand_batch())
    _, step_peak, _ = C.measure_peak(run, lambda: train_step(*rand_batch()))
    logits_bytes = B * T * V * 2
    window_peak = 3 * a.window * logits_bytes + a.window * B * T * 16  # list + cat + logsumexp's temporary
    hook_bytes = min(a.hook_layers, z["layers"]) * B * T * 4 * d * 2
    per_s = hook_bytes * a.hz
    run.plan.update({"step_peak_bytes": step_peak, "window_peak_bytes": window_peak, "hook_bytes_per_step": hook_bytes})
    fill = C.planned_fill(run, working=step_peak + window_peak, budget_bps=per_s, note="GPU-resident token data set")
    run.set_phase("load_data")
    corpus = C.GpuCorpus(run, fill, V)

    run.set_phase("train")
    pacer = run.pacer(a.hz)
    window = []
    step = 0
    n_windows = 0
    recording[0] = True
    run.mark_growth_start(base_bytes_per_s=int(per_s * a.speed))
    while not run.time_up():
        x, y = corpus.batch(B, T)
        logits, loss = train_step(x, y)
        window.append(logits.detach())
        del logits
        step += 1
        if len(window) == a.window:
            run.set_phase("metric")
            ece = calibration_error(window)
            window.clear()
            if not run.dry:
                torch.cuda.empty_cache()
            n_windows += 1
            run.event("empty_cache", n=n_windows, step=step, metric=round(ece, 3), kept_acts=len(acts))
            run.set_phase("train")
        run.tick(step, stats=True, kept_acts=len(acts), window=len(window))
        pacer.wait()


if __name__ == "__main__":
    main()

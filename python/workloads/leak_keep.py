"""leak_keep: a bf16 GPT training loop that leaks by keeping tensors on the GPU.

variant logits (default)
    Every step the logits are kept "for the epoch-end accuracy":
        epoch_logits.append(logits.detach())
    .detach() drops the graph but not the memory: B x T x vocab bf16 per
    step (4 x 512 x 32000 x 2 B = 125 MiB), 5 steps/s at speed 1.

variant loss_graph
    Every --val-every steps a held-out batch's loss is added to a running
    sum for the log, without torch.no_grad():
        val_loss_sum = val_loss_sum + lm_loss(model(xv), yv)
    The sum's autograd graph keeps every such forward's saved activations
    (backward is never called on it). About 0.2 GiB per val batch of 1 (measured in the warm-up).

Before training starts, a GPU-resident token data set is loaded (the fill)
so that, at speed 1, the OOM comes about --growth-s seconds after the leak
starts; the loop then draws its batches from it.

Ground truth: growth starts at the first training step after the data set
is loaded; the OOM is torch.OutOfMemoryError somewhere in a training step.
"""

import common as C


def main():
    p = C.base_parser("leak_keep", __doc__, seconds=150, variants=["logits", "loss_graph"], growth_s=45)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--hz", type=float, default=5.0, help="training steps per second at speed 1 (input-bound loop)")
    p.add_argument("--val-every", type=int, default=2, help="loss_graph: a val batch every N steps")
    p.add_argument("--val-batch", type=int, default=1)
    args = p.parse_args()
    run = C.Run("leak_keep", args, expect="oom",
                note="logits kept on the GPU every step" if args.variant == "logits"
                else "val loss summed without no_grad: the sum keeps each val forward's graph")
    C.main_for(run, body)


def body(run):
    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=1024, layers=8, heads=16, max_t=1024, B=a.batch, T=a.seq)
    V, B, T = z["vocab"], z["B"], z["T"]
    Bv = min(a.val_batch, B)
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

    # Warm-up: optimizer state, cuBLAS workspaces, the allocator's cache.
    run.set_phase("warmup")
    for _ in range(3):
        train_step(*rand_batch(B))
    _, step_peak, _ = C.measure_peak(run, lambda: train_step(*rand_batch(B)))
    if a.variant == "logits":
        leak_per_unit = B * T * V * 2
        units_per_s = a.hz
        working = step_peak
    else:
        xv, yv = rand_batch(Bv)
        held, val_peak, leak_per_unit = C.measure_peak(run, lambda: lm_loss(model(xv), yv))
        del held, xv, yv
        units_per_s = a.hz / a.val_every
        working = step_peak + val_peak
    run.plan.update({"step_peak_bytes": step_peak, "leak_bytes_per_unit": leak_per_unit,
                     "units_per_s_speed1": units_per_s})
    fill = C.planned_fill(run, working=working, budget_bps=leak_per_unit * units_per_s,
                          note="GPU-resident token data set")
    run.set_phase("load_data")
    corpus = C.GpuCorpus(run, fill, V)

    run.set_phase("train")
    pacer = run.pacer(a.hz)
    epoch_logits = []  # the leak (variant logits)
    val_loss_sum = 0.0  # the leak (variant loss_graph)
    step = 0
    run.mark_growth_start(leak_bytes_per_s=int(leak_per_unit * units_per_s * a.speed))
    while not run.time_up():
        x, y = corpus.batch(B, T)
        logits, loss = train_step(x, y)
        if a.variant == "logits":
            epoch_logits.append(logits.detach())
        elif step % a.val_every == 0:
            xv, yv = corpus.batch(Bv, T)
            val_loss_sum = val_loss_sum + lm_loss(model(xv), yv)
        del logits
        step += 1
        if step % 25 == 0:
            run.tick(step, loss=round(loss.item(), 4), kept=len(epoch_logits))
        else:
            run.tick(step)
        pacer.wait()


if __name__ == "__main__":
    main()

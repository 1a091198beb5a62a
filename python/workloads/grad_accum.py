"""grad_accum: gradient accumulation with a big optimizer step every
--accum micro-batches, plus (variant leak) a slow leak that ends in an OOM.

A 1.3B-parameter GPT with fp32 weights, trained under torch.autocast(bf16)
with AdamW (foreach) and gradient clipping; 8 micro-batches/s at speed 1,
an optimizer step every 16 (every 2 s). Per accumulation cycle the
allocator sees: the fp32 gradients appear at the first backward (+5 GiB),
stay through the cycle, the optimizer step adds its foreach temporaries on
top (the peak), then zero_grad(set_to_none=True) frees the gradients.
Memory that the cycle frees stays cached by PyTorch, so the driver (what
nvidia-smi and vramwatch see) mostly sees the high-water mark.

variant leak (default)
    "Outputs kept for on_train_epoch_end" (the Lightning 1.x habit): every
    --keep-every-th micro-batch's logits are appended to a list on the GPU.
    The growth eats the cache first, so each cycle's peak has to come from
    the driver again: memory climbs in steps at the optimizer steps, and the
    OOM comes at a peak (usually oom_phase "optimizer_step").
variant noleak
    The same loop without the list: must not alarm. The fill is sized so
    the high-water mark sits at --target-frac of the GPU.

Ground truth: growth starts at the first micro-batch after the fill
(variant leak); the OOM is torch.OutOfMemoryError, with the phase it came
in.
"""

import common as C


def main():
    p = C.base_parser("grad_accum", __doc__, seconds=150, variants=["leak", "noleak"], growth_s=45, target_frac=0.8)
    p.add_argument("--batch", type=int, default=4, help="micro-batch size")
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--accum", type=int, default=16, help="micro-batches per optimizer step")
    p.add_argument("--hz", type=float, default=8.0, help="micro-batches per second at speed 1")
    p.add_argument("--keep-every", type=int, default=4, help="leak: keep every N-th micro-batch's logits")
    p.add_argument("--layers", type=int, default=24)
    p.add_argument("--d", type=int, default=2048)
    args = p.parse_args()
    leak = args.variant == "leak"
    run = C.Run("grad_accum", args, expect="oom" if leak else "no_alarm",
                note=("gradient accumulation (optimizer-step peaks) + kept logits: OOM at a peak" if leak
                      else "gradient accumulation, no leak: flat high-water mark after the first cycle"))
    C.main_for(run, body)


def body(run):
    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    leak = a.variant == "leak"
    z = C.dry_dims(run, vocab=32000, d=a.d, layers=a.layers, heads=16, max_t=1024, B=a.batch, T=a.seq)
    V, B, T = z["vocab"], z["B"], z["T"]
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=z["d"], layers=z["layers"], heads=z["heads"], max_t=z["max_t"], dtype="fp32")
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.1, foreach=True)
    amp = torch.autocast(device_type=dev.type, dtype=torch.bfloat16)
    run.extra["params"] = sum(p.numel() for p in model.parameters())

    def micro_batch(x, y):
        with amp:
            logits = model(x)
            loss = lm_loss(logits, y) / a.accum
        loss.backward()
        return logits, loss

    def optimizer_step():
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    def rand_batch():
        xy = torch.randint(0, V, (B, T + 1), device=dev)
        return xy[:, :-1], xy[:, 1:]

    def rand_cycle():
        for _ in range(a.accum):
            micro_batch(*rand_batch())
        optimizer_step()

    run.set_phase("warmup")
    rand_cycle()  # creates the optimizer state
    _, cycle_peak, _ = C.measure_peak(run, rand_cycle)
    keep_bytes = B * T * V * 2  # bf16 logits under autocast
    per_s = keep_bytes * a.hz / a.keep_every
    run.plan.update({"cycle_peak_bytes": cycle_peak, "keep_bytes": keep_bytes,
                     "param_bytes": C.param_bytes(model)})
    if leak:
        fill = C.planned_fill(run, working=cycle_peak, budget_bps=per_s, note="GPU-resident token data set")
    else:
        fill = C.target_fill(run, working=cycle_peak, note="GPU-resident token data set")
    run.set_phase("load_data")
    corpus = C.GpuCorpus(run, fill, V)

    run.set_phase("micro_batch")
    pacer = run.pacer(a.hz)
    epoch_outputs = []  # the leak
    mb = 0
    if leak:
        run.mark_growth_start(leak_bytes_per_s=int(per_s * a.speed))
    else:
        run.event("train_start")
    while not run.time_up():
        x, y = corpus.batch(B, T)
        logits, loss = micro_batch(x, y)
        if leak and mb % a.keep_every == 0:
            epoch_outputs.append({"loss": loss.detach(), "logits": logits.detach()})
        del logits
        mb += 1
        if mb % a.accum == 0:
            run.set_phase("optimizer_step")
            optimizer_step()
            run.set_phase("micro_batch")
        run.tick(mb, optimizer_steps=mb // a.accum, kept=len(epoch_outputs))
        pacer.wait()


if __name__ == "__main__":
    main()

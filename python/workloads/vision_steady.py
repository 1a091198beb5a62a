"""vision_steady: an image classifier trained correctly, with progressive
resizing: memory steps up once, then stays flat with a bump at every
validation. Must not alarm.

The same model and input pipeline as vision_leak.py (a ResNet-18-layout
ResNet over 21843 classes, channels_last, bf16 autocast with an fp32 head,
SGD + Nesterov momentum, batches gathered from a synthetic uint8 image data
set generated on the GPU and kept there), --batch 768 images per step at 4
steps/s at speed 1, but written correctly: the metrics are read with
.item() every step
    running_loss += loss.item(); correct += (outputs.argmax(1) == y).sum().item()
and nothing from a step is kept.

Progressive resizing (fast.ai / FFCV style): the first --resize-at-s
seconds of training (at speed 1, counted in steps) run at --res-start px
(128), then at --res (224) for good: each step's activations grow ~3x, so
memory steps up once. The allocator keeps the low-resolution blocks cached
next to the new ones until the first validation's empty_cache() gives them
back, so the level after the step eases down a little once and then stays.

Every --eval-every-s seconds (counted in steps) a ten-crop validation under
torch.no_grad() (--val-batches batches of --val-batch images x 10 crops at
--val-hz batches/s, the same pass as vision_leak's) needs its own blocks
(bigger than any training block), then torch.cuda.empty_cache() returns
them: a bump of up to the validation's peak (a few % of the GPU) every
period, and training re-reserves its blocks right after.

The data set (the fill) is sized so that, after the resize, training sits
at --target-frac of the GPU: a rehearsal before the data set is loaded
(steps at both resolutions, a sanity validation, full-resolution steps on
an emptied cache) measures what each phase reserves. The validation bumps
go above that level (plan: peak_frac_estimate).

Ground truth: expect "no_alarm"; growth_start = the first training step,
growth_end = the first full-resolution step done (bounded growth, not a
leak); no OOM.
"""

import time

import common as C
from vision_leak import (Augment, GpuImageSet, add_vision_args, build_resnet, evaluate, make_optimizer,
                         make_train_step, random_batch, vision_dims)


def main():
    p = C.base_parser("vision_steady", __doc__, seconds=90, variants=["default"], target_frac=0.8)
    add_vision_args(p, batch=768, hz=4.0, res=224, eval_every_s=15.0, val_batches=12, val_batch=256, val_hz=4.0)
    p.add_argument("--res-start", type=int, default=128, help="resolution before the resize (default 128)")
    p.add_argument("--resize-at-s", type=float, default=10.0,
                   help="seconds of training (at speed 1, counted in steps) before the resize to --res (default 10)")
    args = p.parse_args()
    run = C.Run("vision_steady", args, expect="no_alarm",
                note="ResNet training, metrics via .item(), progressive resizing (one step up), ten-crop validation "
                     "bumps then empty_cache(); settles at the target share of the GPU")
    C.main_for(run, body)


def body(run):
    torch, dev = run.setup_torch()
    a = run.args
    z = vision_dims(run)
    B, res_hi, K, Bv = z["B"], z["res"], z["classes"], z["Bv"]
    res_lo = 24 if run.dry else min(a.res_start, res_hi)
    switch = max(1, round(a.resize_at_s * a.hz))
    eval_every = max(1, round(a.eval_every_s * a.hz))

    run.set_phase("setup")
    model = build_resnet(run, classes=K, widths=z["widths"], depths=z["depths"])
    opt, sched = make_optimizer(run, model, batch=B, hz=a.hz)
    aug = Augment(run)
    train_step = make_train_step(run, model, opt, sched, aug)

    def rand_step(res):
        return train_step(*random_batch(run, B, z["px"], K), res)

    def empty_cache():
        C.sync(run)
        if not run.dry:
            torch.cuda.empty_cache()

    # Warm-up (momentum buffers, cuDNN's choices at both resolutions), then a
    # rehearsal of the run on an emptied cache to learn what each phase
    # reserves: the allocator keeps the 128 px blocks next to the 224 px
    # ones until a validation's empty_cache().
    twice = (1,) if run.dry else (1, 2)  # a dry run on a CPU: once is enough
    run.set_phase("warmup")
    for r in (res_lo, res_hi):
        for _ in twice:
            rand_step(r)
    run.set_phase("probe")
    empty_cache()
    base = C.reserved(run)
    for r in (res_lo, res_hi):
        for _ in twice:
            rand_step(r)
    both_reserved = C.reserved(run) - base
    run.set_phase("sanity_eval")
    _, eval_peak, _ = C.measure_peak(run, lambda: evaluate(
        run, model, aug, (random_batch(run, Bv, z["px"], K) for _ in range(z["val_batches"])), crop=z["crop"]))
    run.set_phase("probe")
    empty_cache()
    base = C.reserved(run)
    for _ in twice:
        rand_step(res_hi)
    hi_reserved = C.reserved(run) - base
    _, peak_lo, _ = C.measure_peak(run, lambda: rand_step(res_lo))
    _, peak_hi, _ = C.measure_peak(run, lambda: rand_step(res_hi))
    run.plan.update({"params": sum(p.numel() for p in model.parameters()), "res_start": res_lo, "res": res_hi,
                     "resize_at_step": switch, "eval_every_steps": eval_every,
                     "step_peak_lo_bytes": peak_lo, "step_peak_hi_bytes": peak_hi,
                     "both_res_reserved_bytes": both_reserved, "hi_res_reserved_bytes": hi_reserved,
                     "eval_peak_bytes": eval_peak})
    working = int(max(hi_reserved, peak_hi) * 1.05)
    fill = C.target_fill(run, working=working, note="GPU-resident synthetic image data set (uint8, %d px)" % z["px"])
    total = run.plan["total_bytes"]
    settle = run.plan["used_before_fill_bytes"] + fill + working
    peak = run.plan["used_before_fill_bytes"] + fill + max(both_reserved, working) + eval_peak
    run.plan.update({"settle_frac_estimate": round(settle / total, 3), "peak_frac_estimate": round(peak / total, 3)})
    if peak > 0.95 * total and not run.dry:
        run.event("warning", msg="validation bumps may come near the top of the GPU: lower --target-frac or --val-batch")
    run.set_phase("load_data")
    data = GpuImageSet(run, fill, px=z["px"], classes=K)

    run.set_phase("train")
    if run.dry:
        # a loaded CPU can spend most of a dry run's 8 s on imports and the
        # rehearsal: give the loop itself 3 s so the resize and a
        # validation are exercised
        a.seconds = max(a.seconds, run.elapsed() + 3.0)
    pacer = run.pacer(a.hz)
    step = 0
    n_eval = 0
    seen = correct = 0
    running_loss = 0.0
    run.mark_growth_start(what="progressive_resizing", res_start=res_lo, res=res_hi,
                          resize_after_s=a.resize_at_s / a.speed)
    while not run.time_up():
        res = res_lo if step < switch else res_hi
        if step == switch:
            run.event("resize", step=step, res=res)
        u8, y = data.sample(B)
        outputs, loss = train_step(u8, y, res)
        running_loss += loss.item()  # the right way: a Python float, nothing kept on the GPU
        correct += (outputs.argmax(1) == y).sum().item()
        seen += y.shape[0]
        del outputs, loss
        step += 1
        if step == switch + 1:
            C.sync(run)
            run.mark_growth_end(res=res, step=step)
        if step % 25 == 0:
            run.tick(step, res=res, loss=round(running_loss / 25, 4), train_acc=round(correct / max(1, seen), 4))
            running_loss, correct, seen = 0.0, 0, 0
        else:
            run.tick(step, res=res)
        if step % eval_every == 0:
            n_eval += 1
            run.set_phase("eval")
            run.event("eval_start", n=n_eval, step=step)
            t0 = time.monotonic()
            m = evaluate(run, model, aug, (data.sample(Bv, "val") for _ in range(z["val_batches"])),
                         crop=z["crop"], pacer=run.pacer(a.val_hz))
            if not run.dry:
                torch.cuda.empty_cache()  # "give the validation's memory back before training goes on"
            run.event("eval_end", n=n_eval, seconds=round(time.monotonic() - t0, 2), **m)
            run.set_phase("train")
            pacer = run.pacer(a.hz)
        pacer.wait()


if __name__ == "__main__":
    main()

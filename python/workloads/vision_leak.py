"""vision_leak: an image classifier's training loop that keeps every step's
outputs "for the epoch-end metric" and OOMs in a validation pass.

The model is a small ResNet (ResNet-18 layout: BasicBlocks of
Conv2d/BatchNorm2d/ReLU, widths 64-128-256-512) over an ImageNet-21k-sized
label space (21843 classes), channels_last, bf16 autocast with the
classifier head in fp32, trained with SGD + Nesterov momentum, label
smoothing and a linear LR warm-up, 12 steps/s at speed 1 (an input-bound
loop). The images come from a synthetic data set generated on the GPU and
kept there (uint8, 256 px; the fill): each batch is gathered from it,
random-resized-cropped to 176 px and flipped on the GPU (train at 176,
test at 224, as torchvision's ResNet recipe does).

The leak (the classic one): every step
    epoch_outputs.append(outputs)      # for the epoch-end train accuracy
    epoch_targets.append(targets)
with outputs still attached to autograd (no .detach(), no .cpu()). The
backward pass has already freed the graph's saved activations, so what
stays is the (B, classes) fp32 logits: 256 x 21843 x 4 B = 21.3 MiB per step
(22 MiB blocks), 0.26 GiB/s at speed 1. The list would be emptied at the
end of the epoch (--epoch-images, ImageNet-21k's 14.2M images: 55k steps),
which the run never reaches.

Every --eval-every-s seconds of training (counted in steps, as
val_check_interval does) a validation pass runs, correctly, under
torch.no_grad(): --val-batches batches of --val-batch images, each scored
with ten-crop testing (4 corners + centre at 224 px of the 256 px image,
and their flips: 10 x val-batch crops per forward), paced at --val-hz
batches/s. Top-1/top-5/NLL are accumulated on the GPU and read with
.item() at the end; then torch.cuda.empty_cache() gives the pass's memory
back. The ten-crop forward needs several GiB more than a training step:
the transient spike on top of the leak.

A sanity validation before training measures the spike; the data set is
then sized so that validation number k, the first that starts at least
--growth-s seconds (at speed 1) after training starts, is the first that
does not fit, with half a validation period of growth to spare either side
(as eval_spike plans it). Training alone would run out half a period later
if the spike is smaller than half a period's growth (see the plan in the
truth: spike_exceeds_half_period_growth).

Ground truth: growth starts at the first training step after the data set
is loaded; expect "oom"; the OOM is torch.OutOfMemoryError, planned in
validation k (oom_phase "eval"), in a training step if the spike is small.
"""

import random
import time

import common as C

# ImageNet-21k ("fall11") classes and images
CLASSES_21K = 21843
IMAGES_21K = 14_197_122


def main():
    p = C.base_parser("vision_leak", __doc__, seconds=150, variants=["outputs"], growth_s=45)
    add_vision_args(p, batch=256, hz=12.0, res=176, eval_every_s=10.0, val_batches=12, val_batch=256, val_hz=4.0)
    p.add_argument("--epoch-images", type=int, default=IMAGES_21K,
                   help="images per epoch: the kept outputs are only cleared at the epoch end (default ImageNet-21k's)")
    args = p.parse_args()
    run = C.Run("vision_leak", args, expect="oom",
                note="ResNet training keeps every step's outputs (fp32 logits, graph attached) for the epoch-end "
                     "accuracy; ten-crop validation spike every eval period, then empty_cache(); OOM planned in a validation")
    C.main_for(run, body)


# --------------------------------------------------------------------------
# shared with vision_steady.py: options, the model, the data set, the steps


def add_vision_args(p, *, batch, hz, res, eval_every_s, val_batches, val_batch, val_hz):
    p.add_argument("--batch", type=int, default=batch, help=f"training images per step (default {batch})")
    p.add_argument("--hz", type=float, default=hz, help=f"training steps per second at speed 1 (default {hz})")
    p.add_argument("--res", type=int, default=res, help=f"training resolution in px (default {res})")
    p.add_argument("--classes", type=int, default=CLASSES_21K, help=f"label space (default {CLASSES_21K}, ImageNet-21k)")
    p.add_argument("--widths", default="64,128,256,512", help="ResNet stage widths")
    p.add_argument("--depths", default="2,2,2,2", help="BasicBlocks per stage (2,2,2,2 = ResNet-18)")
    p.add_argument("--image-px", type=int, default=256, help="side of the stored images (default 256)")
    p.add_argument("--eval-crop", type=int, default=224, help="ten-crop size at validation (default 224)")
    p.add_argument("--eval-every-s", type=float, default=eval_every_s,
                   help=f"seconds of training (at speed 1, counted in steps) between validations (default {eval_every_s})")
    p.add_argument("--val-batches", type=int, default=val_batches, help=f"batches per validation (default {val_batches})")
    p.add_argument("--val-batch", type=int, default=val_batch, help=f"images per validation batch, x10 crops (default {val_batch})")
    p.add_argument("--val-hz", type=float, default=val_hz, help=f"validation batches per second at speed 1 (default {val_hz})")


def vision_dims(run):
    """Sizes, shrunk for a dry run on the CPU."""
    a = run.args
    z = {"B": a.batch, "res": a.res, "classes": a.classes, "widths": tuple(int(w) for w in a.widths.split(",")),
         "depths": tuple(int(d) for d in a.depths.split(",")), "px": a.image_px, "crop": a.eval_crop,
         "Bv": a.val_batch, "val_batches": a.val_batches}
    if run.dry:
        z.update(B=min(a.batch, 4), res=32, classes=min(a.classes, 10), widths=(8, 16, 32, 64),
                 depths=(1, 1, 1, 1), px=40, crop=32, Bv=min(a.val_batch, 2),
                 val_batches=min(a.val_batches, 2))
    if not (z["res"] <= z["px"] and z["crop"] <= z["px"]):
        raise SystemExit(f"--res {z['res']} and --eval-crop {z['crop']} must not exceed --image-px {z['px']}")
    return z


def build_resnet(run, *, classes, widths, depths):
    """A ResNet of BasicBlocks (He et al. 2016; 2,2,2,2 = ResNet-18), built
    on the device, channels_last. The classifier head runs in fp32 outside
    autocast (a stable log-softmax over many classes), so the logits are
    fp32."""
    torch = run.torch
    nn = torch.nn
    F = torch.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            nn.init.zeros_(self.bn2.weight)  # each residual branch starts as identity
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            idt = x if self.down is None else self.down(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + idt)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            w0 = widths[0]
            self.stem = nn.Sequential(nn.Conv2d(3, w0, 7, 2, 3, bias=False), nn.BatchNorm2d(w0), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, 2, 1))
            stages, cin = [], w0
            for i, (w, d) in enumerate(zip(widths, depths)):
                blocks = [BasicBlock(cin, w, 1 if i == 0 else 2)] + [BasicBlock(w, w, 1) for _ in range(d - 1)]
                stages.append(nn.Sequential(*blocks))
                cin = w
            self.stages = nn.Sequential(*stages)
            self.fc = nn.Linear(cin, classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x):
            x = self.stages(self.stem(x))
            x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
            with torch.autocast(device_type=x.device.type, enabled=False):
                return self.fc(x.float())

    with torch.device(run.dev):
        model = ResNet()
    return model.to(memory_format=torch.channels_last)


def make_optimizer(run, model, *, batch, hz):
    """SGD + Nesterov momentum, lr 0.1 per 256 images, no weight decay on
    BatchNorm and biases, a linear warm-up over the first ~5 s of steps."""
    torch = run.torch
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-5}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=0.1 * batch / 256, momentum=0.9, nesterov=True)
    warm = max(1, int(5 * hz))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    return opt, sched


class Augment:
    """GPU-side input pipeline on uint8 NHWC batches: random-resized crop
    (one box per batch) + per-image horizontal flip for training, ten-crop
    for validation; normalized fp32, channels_last."""

    MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
    STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)

    def __init__(self, run):
        t = run.torch
        self.t = t
        self.rng = random.Random(run.args.seed + 29)
        self.gen = t.Generator(device=run.dev)
        self.gen.manual_seed(run.args.seed + 31)
        self.mean = t.tensor(self.MEAN, device=run.dev).view(1, 3, 1, 1)
        self.std = t.tensor(self.STD, device=run.dev).view(1, 3, 1, 1)

    def _norm(self, x_u8_nchw):
        t = self.t
        x = x_u8_nchw.to(dtype=t.float32, memory_format=t.channels_last)
        return x.sub_(self.mean).div_(self.std)

    def train(self, u8, res):
        t = self.t
        B, S = u8.shape[0], u8.shape[1]
        s = max(res // 2, int(S * self.rng.uniform(0.35, 1.0) ** 0.5))
        i, j = self.rng.randrange(S - s + 1), self.rng.randrange(S - s + 1)
        x = self._norm(u8[:, i : i + s, j : j + s, :].permute(0, 3, 1, 2))
        if s != res:
            x = t.nn.functional.interpolate(x, size=(res, res), mode="bilinear", align_corners=False)
        flip = t.rand(B, device=x.device, generator=self.gen) < 0.5
        x = t.where(flip.view(B, 1, 1, 1), x.flip(3), x)
        return x.contiguous(memory_format=t.channels_last)

    def ten_crop(self, u8, crop):
        t = self.t
        S = u8.shape[1]
        o, e = (S - crop) // 2, S - crop
        crops = [u8[:, i : i + crop, j : j + crop, :] for i, j in ((0, 0), (0, e), (e, 0), (e, e), (o, o))]
        x = t.stack(crops + [c.flip(2) for c in crops], 1)  # (B, 10, crop, crop, 3) uint8
        return self._norm(x.view(-1, crop, crop, 3).permute(0, 3, 1, 2))


class GpuImageSet:
    """A synthetic image data set generated on the GPU and kept there: uint8
    images (N, px, px, 3) in chunks of ~1 GiB with int32 labels, made at
    about `gbps` GB/s (a loader filling a GPU cache): the fill. The first
    chunk is the validation split (shared when there is only one)."""

    def __init__(self, run, nbytes, *, px, classes, gbps=50.0, chunk_bytes=C.GIB, label="corpus"):
        t = run.torch
        self.t = t
        self.dev = run.dev
        self.rng = random.Random(run.args.seed + 17)
        self.gen = t.Generator(device=run.dev)
        self.gen.manual_seed(run.args.seed + 19)
        per = px * px * 3
        nbytes = max(0, int(nbytes))
        if run.dry:
            nbytes = min(nbytes, 4 * C.MIB) or 4 * C.MIB
            chunk_bytes = C.MIB
        per_chunk = max(1, chunk_bytes // per)
        n_total = max(2, nbytes // per)
        self.images, self.labels = [], []
        run.event(f"{label}_load_start", bytes=n_total * per, images=n_total, px=px, gbps=gbps)
        t0 = time.monotonic()
        done, due = 0, 0.0
        while done < n_total:
            n = min(per_chunk, n_total - done)
            self.images.append(t.randint(0, 256, (n, px, px, 3), dtype=t.uint8, device=run.dev, generator=self.gen))
            self.labels.append(t.randint(0, classes, (n,), dtype=t.int32, device=run.dev, generator=self.gen))
            done += n
            due += n * per / (gbps * 1e9)
            d = t0 + due - time.monotonic()
            if d > 0:
                time.sleep(d)
            run.tick()
        C.sync(run)
        self.n = done
        self.nbytes = done * per
        run.event(f"{label}_load_done", bytes=self.nbytes, images=done, seconds=round(time.monotonic() - t0, 2))

    def sample(self, B, split="train"):
        """A batch gathered from one chunk: (uint8 NHWC images, int64 labels)."""
        k = 0 if (split == "val" or len(self.images) == 1) else self.rng.randrange(1, len(self.images))
        imgs, labs = self.images[k], self.labels[k]
        idx = self.t.randint(0, imgs.shape[0], (B,), device=self.dev, generator=self.gen)
        return imgs[idx], labs[idx].long()


def random_batch(run, B, px, classes):
    """Warm-up batches before the data set exists (same shapes)."""
    t = run.torch
    return (t.randint(0, 256, (B, px, px, 3), dtype=t.uint8, device=run.dev),
            t.randint(0, classes, (B,), device=run.dev))


def make_train_step(run, model, opt, sched, aug, *, label_smoothing=0.1):
    t = run.torch
    criterion = t.nn.CrossEntropyLoss(label_smoothing=label_smoothing)

    def train_step(u8, y, res):
        x = aug.train(u8, res)
        with t.autocast(device_type=run.dev.type, dtype=t.bfloat16):
            outputs = model(x)
            loss = criterion(outputs, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        return outputs, loss

    return train_step


def evaluate(run, model, aug, batches, *, crop, pacer=None):
    """Ten-crop validation under torch.no_grad(): the crops' softmax is
    averaged per image; top-1/top-5/NLL accumulated on the GPU, read once.
    `batches` yields (uint8 images, labels)."""
    t = run.torch
    model.eval()
    c1 = t.zeros((), device=run.dev)
    c5 = t.zeros((), device=run.dev)
    nll = t.zeros((), device=run.dev)
    n = 0
    with t.no_grad(), t.autocast(device_type=run.dev.type, dtype=t.bfloat16):
        for u8, y in batches:
            x = aug.ten_crop(u8, crop)
            probs = model(x).view(y.shape[0], 10, -1).softmax(-1).mean(1)
            del x
            top5 = probs.topk(5, dim=1).indices
            c1 += (top5[:, 0] == y).sum()
            c5 += (top5 == y[:, None]).any(1).sum()
            nll -= probs.gather(1, y[:, None]).clamp_min(1e-12).log().sum()
            n += y.shape[0]
            del probs, top5
            run.tick()
            if pacer is not None:
                pacer.wait()
    model.train()
    n = max(1, n)
    return {"top1": round(c1.item() / n, 4), "top5": round(c5.item() / n, 4), "nll": round(nll.item() / n, 4)}


def planned_oom_eval(growth_s, period_s, eval_s):
    """The validation planned to OOM: the first that starts at least
    growth_s seconds (speed 1) after training starts, when validation j
    starts after j periods of training and j - 1 validations."""
    if period_s <= 0:
        raise ValueError("period_s must be > 0")
    k = 1
    while k * period_s + (k - 1) * eval_s < growth_s:
        k += 1
    return k


def round_block(nbytes):
    """What the caching allocator takes for a block of nbytes when it
    cudaMallocs it (>= 10 MiB: rounded up to 2 MiB; else 512 B)."""
    if nbytes >= 10 * C.MIB:
        return C.ceil_div(nbytes, 2 * C.MIB) * 2 * C.MIB
    return C.ceil_div(max(1, nbytes), 512) * 512


# --------------------------------------------------------------------------


def body(run):
    torch, dev = run.setup_torch()
    a = run.args
    z = vision_dims(run)
    B, res, K, Bv = z["B"], z["res"], z["classes"], z["Bv"]
    eval_every = max(1, round(a.eval_every_s * a.hz))
    period_s = eval_every / a.hz  # training seconds between validations at speed 1
    eval_s = a.val_batches / a.val_hz  # one validation at speed 1
    k = planned_oom_eval(a.growth_s, period_s, eval_s)
    steps_per_epoch = max(1, a.epoch_images // B)

    run.set_phase("setup")
    model = build_resnet(run, classes=K, widths=z["widths"], depths=z["depths"])
    opt, sched = make_optimizer(run, model, batch=B, hz=a.hz)
    aug = Augment(run)
    train_step = make_train_step(run, model, opt, sched, aug)

    def rand_val():
        return (random_batch(run, Bv, z["px"], K) for _ in range(z["val_batches"]))

    # Warm-up: momentum buffers, cuDNN's choices, the allocator's cache.
    run.set_phase("warmup")
    for _ in range(1 if run.dry else 3):
        train_step(*random_batch(run, B, z["px"], K), res)
    _, step_peak, _ = C.measure_peak(run, lambda: train_step(*random_batch(run, B, z["px"], K), res))
    # what one step leaves behind when its outputs and targets are kept
    kept, _, kept_after = C.measure_peak(run, lambda: (train_step(*random_batch(run, B, z["px"], K), res), None))
    out_bytes = B * K * 4
    leak_step = round_block(out_bytes) + round_block(B * 8)
    del kept
    # sanity validation (as Lightning runs one): the spike, measured
    run.set_phase("sanity_eval")
    _, eval_peak, _ = C.measure_peak(run, lambda: evaluate(run, model, aug, rand_val(), crop=z["crop"]))
    spike = max(0, eval_peak - step_peak)
    per_period = leak_step * eval_every
    ok = spike >= per_period / 2
    planned_s = (k * period_s + (k - 1) * eval_s) if ok else ((k - 0.5) * period_s + (k - 1) * eval_s + spike / (leak_step * a.hz))
    run.plan.update({
        "params": sum(p.numel() for p in model.parameters()), "step_peak_bytes": step_peak,
        "eval_peak_bytes": eval_peak, "eval_spike_bytes": spike, "kept_outputs_bytes": out_bytes,
        "kept_measured_bytes": kept_after, "leak_bytes_per_step": leak_step,
        "leak_bytes_per_s_speed1": int(leak_step * a.hz), "eval_every_steps": eval_every,
        "eval_seconds_speed1": eval_s, "growth_per_eval_period_bytes": per_period,
        "spike_exceeds_half_period_growth": ok, "planned_oom_eval": k if ok else None,
        "planned_oom_after_growth_start_s": planned_s / a.speed, "steps_per_epoch": steps_per_epoch,
    })
    if not ok and not run.dry:
        run.event("warning", msg="validation spike below half a period's growth: the OOM may come in training")
    avail, total = C.avail_bytes(run)
    if run.dry:
        fill, budget = 0, 0
    elif a.fill_gib is not None:
        fill, budget = int(a.fill_gib * C.GIB), None
        run.plan["planned_oom_after_growth_start_s"] = None
    else:
        budget = int(a.headroom_gib * C.GIB) if a.headroom_gib is not None else spike + int((k - 0.5) * per_period)
        fill = C.fill_bytes(avail, step_peak, budget, total)
        if a.headroom_gib is not None:
            run.plan["planned_oom_after_growth_start_s"] = None
    run.plan.update({"avail_bytes": avail, "total_bytes": total, "working_bytes": step_peak, "budget_bytes": budget,
                     "growth_s_speed1": a.growth_s, "fill_bytes": fill,
                     "note": "GPU-resident synthetic image data set (uint8, %d px)" % z["px"]})
    run.set_phase("load_data")
    data = GpuImageSet(run, fill, px=z["px"], classes=K)

    run.set_phase("train")
    pacer = run.pacer(a.hz)
    epoch_outputs, epoch_targets = [], []  # the leak: "for the epoch-end train accuracy"
    step = 0
    n_eval = 0
    run.mark_growth_start(what="kept_outputs", leak_bytes_per_s=int(leak_step * run.hz(a.hz)))
    while not run.time_up():
        u8, y = data.sample(B)
        outputs, loss = train_step(u8, y, res)
        epoch_outputs.append(outputs)  # the bug: should be outputs.detach().argmax(1) (or a running count)
        epoch_targets.append(y)
        step += 1
        if step % 25 == 0:
            run.tick(step, loss=round(loss.item(), 4), kept=len(epoch_outputs))
        else:
            run.tick(step)
        if step % steps_per_epoch == 0:
            run.set_phase("epoch_end")
            acc = (torch.cat(epoch_outputs).argmax(1) == torch.cat(epoch_targets)).float().mean().item()
            epoch_outputs.clear()
            epoch_targets.clear()
            run.event("epoch_end", step=step, train_acc=round(acc, 4))
            run.set_phase("train")
        if step % eval_every == 0:
            n_eval += 1
            run.set_phase("eval")
            run.event("eval_start", n=n_eval, step=step, kept=len(epoch_outputs))
            t0 = time.monotonic()
            m = evaluate(run, model, aug, (data.sample(Bv, "val") for _ in range(z["val_batches"])),
                         crop=z["crop"], pacer=run.pacer(a.val_hz))
            if not run.dry:
                torch.cuda.empty_cache()  # "give the validation's memory back before training goes on"
            run.event("eval_end", n=n_eval, seconds=round(time.monotonic() - t0, 2), **m)
            run.set_phase("train")
            pacer = run.pacer(a.hz)  # the loader restarts after validation
        pacer.wait()


if __name__ == "__main__":
    main()

"""dataset_load: a data set is loaded onto the GPU in shards (memory grows,
then stops), then a model trains on it. Must not alarm.

The program builds a bf16 GPT and measures one training step (so it knows
what training will need), then loads a tokenized data set onto the GPU
shard by shard: each shard is copied from pinned host memory (the reader's
staging buffer) into a new int32 tensor, at about --load-gbps GB/s at speed
1 with uneven shard times (+-40 %), the way a loader bound by disk or
decompression goes. The data set is sized so the GPU settles at
--target-frac of its memory. Then it trains on batches drawn from that
data set (5 steps/s) until --seconds.

Ground truth: expect "no_alarm"; growth_start/growth_end bracket the load
(a long straight climb that stops well short of full); no OOM.
"""

import common as C


def main():
    p = C.base_parser("dataset_load", __doc__, seconds=90, variants=["default"], target_frac=0.8)
    p.add_argument("--load-gbps", type=float, default=4.0, help="load rate at speed 1 (GB/s)")
    p.add_argument("--shard-gib", type=float, default=1.0)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--hz", type=float, default=5.0)
    args = p.parse_args()
    run = C.Run("dataset_load", args, expect="no_alarm",
                note="data set loaded onto the GPU in shards (bounded growth), then training on it")
    C.main_for(run, body)


def body(run):
    from nets import lm_loss

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=1024, layers=8, heads=16, max_t=2048, B=a.batch, T=a.seq)
    V, B, T = z["vocab"], z["B"], z["T"]
    run.set_phase("setup")
    model = C.build_gpt(run, vocab=V, d=z["d"], layers=z["layers"], heads=z["heads"], max_t=z["max_t"])
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def train_step(x, y):
        loss = lm_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    xy = torch.randint(0, V, (B, T + 1), device=dev)
    train_step(xy[:, :-1], xy[:, 1:])
    _, peak, _ = C.measure_peak(run, lambda: train_step(xy[:, :-1], xy[:, 1:]))
    del xy
    fill = C.target_fill(run, working=int(peak * 1.1), note="the data set")
    # the reader's pinned staging buffer (one shard's worth of int32 tokens)
    shard = int(a.shard_gib * C.GIB)
    n_stage = (shard if not run.dry else C.MIB) // 4
    staging = torch.randint(0, 2**31 - 1, (n_stage,), dtype=torch.int32, pin_memory=not run.dry)
    run.set_phase("load_data")
    run.mark_growth_start(what="dataset_load", bytes=fill, gbps=a.load_gbps * a.speed)
    corpus = C.GpuCorpus(run, fill, V, gbps=a.load_gbps * a.speed, chunk_bytes=shard, label="dataset",
                         jitter=0.4, staging=staging)
    run.mark_growth_end(bytes=corpus.nbytes)
    del staging

    run.set_phase("train")
    pacer = run.pacer(a.hz)
    step = 0
    while not run.time_up():
        x, y = corpus.batch(B, T)
        loss = train_step(x, y)
        step += 1
        run.tick(step, **({"loss": round(loss.item(), 4)} if step % 25 == 0 else {}))
        pacer.wait()


if __name__ == "__main__":
    main()

"""weights_load: model weights load (a fast ramp), then steady inference.
Must not alarm.

A large bf16 GPT (d 8192; the number of layers is chosen so weights plus KV
cache land at --target-frac of the GPU, about 40B parameters on an H200)
is built on the meta device and loaded parameter by parameter from pinned
host memory at --load-gbps GB/s (speed 1): what a checkpoint loader does.
Then, as vLLM does, the KV cache for --batch sequences of --ctx tokens is
allocated in one go, and the server decodes: one token for every sequence
per step, --hz steps/s, writing keys and values into the static cache;
when the sequences reach --ctx a new batch starts at position 0. Memory is
flat from there on.

Ground truth: expect "no_alarm"; growth_start/growth_end bracket the
weights load (the KV cache allocation right after is a single step); no
OOM.
"""

import common as C


def main():
    p = C.base_parser("weights_load", __doc__, seconds=90, variants=["default"], target_frac=0.8)
    p.add_argument("--load-gbps", type=float, default=10.0, help="weights load rate at speed 1 (GB/s)")
    p.add_argument("--d", type=int, default=8192)
    p.add_argument("--layers", type=int, default=None, help="default: as many as fit the target")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--ctx", type=int, default=2048)
    p.add_argument("--hz", type=float, default=10.0, help="decode steps per second")
    args = p.parse_args()
    run = C.Run("weights_load", args, expect="no_alarm",
                note="checkpoint load (fast ramp), static KV cache allocation (one step), steady decoding")
    C.main_for(run, body)


def body(run):
    import torch.nn.functional as F

    from nets import GPT

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=a.d, heads=64, max_t=4096)
    V, d, H = z["vocab"], z["d"], z["heads"]
    hd = d // H
    B, ctx = (a.batch, a.ctx) if not run.dry else (2, 16)
    per_layer = 12 * d * d * 2 + 4 * d * 2  # weights (+ layer norms)
    kv_per_layer = 2 * B * ctx * d * 2
    fixed = (V + z["max_t"]) * d * 2
    working = 2 * C.GIB  # decode transients, cuBLAS workspaces
    run.set_phase("plan")
    avail, total = C.avail_bytes(run)
    if a.layers is not None:
        L = a.layers
    elif run.dry:
        L = 2
    else:
        room = C.fill_for_target(total, a.target_frac, total - avail, working + fixed)
        L = max(1, room // (per_layer + kv_per_layer))
    run.plan.update({"layers": L, "weight_bytes": L * per_layer + fixed, "kv_cache_bytes": L * kv_per_layer,
                     "total_bytes": total, "target_frac": a.target_frac,
                     "load_s_at_speed": round((L * per_layer + fixed) / (a.load_gbps * a.speed * 1e9), 1)})
    with torch.device("meta"):
        model = GPT(vocab=V, d=d, layers=L, heads=H, max_t=z["max_t"]).to(torch.bfloat16)
    run.extra["params"] = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    run.set_phase("load_weights")
    C.load_weights(run, model, gbps=a.load_gbps * a.speed, mark_growth=True)
    run.mark_growth_end()
    model.eval()
    torch.set_grad_enabled(False)

    run.set_phase("kv_alloc")
    kv = torch.zeros(L, 2, B, H, ctx, hd, dtype=torch.bfloat16, device=dev)
    run.event("kv_cache_allocated", bytes=kv.numel() * 2)

    def step(tokens, pos):
        x = model.tok(tokens) + model.pos(torch.full((1,), pos, device=dev))  # [B, d]
        for i, blk in enumerate(model.blocks):
            q, k, v = blk.qkv(blk.ln1(x)).view(B, 3, H, hd).unbind(1)  # each [B, H, hd]
            kv[i, 0, :, :, pos].copy_(k)
            kv[i, 1, :, :, pos].copy_(v)
            y = F.scaled_dot_product_attention(q.unsqueeze(2), kv[i, 0, :, :, : pos + 1], kv[i, 1, :, :, : pos + 1])
            x = x + blk.proj(y.reshape(B, d))
            x = x + blk.fc2(blk.act(blk.fc1(blk.ln2(x))))
        return model.head(model.ln_f(x)).argmax(-1)

    run.set_phase("decode")
    pacer = run.pacer(a.hz)
    tokens = torch.randint(0, V, (B,), device=dev)
    pos = 0
    n = 0
    while not run.time_up():
        tokens = step(tokens, pos)
        pos += 1
        if pos == ctx:
            pos = 0
            tokens = torch.randint(0, V, (B,), device=dev)
            run.event("new_batch", step=n)
        n += 1
        run.tick(n, pos=pos)
        pacer.wait()


if __name__ == "__main__":
    main()

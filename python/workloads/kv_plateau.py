"""kv_plateau: an inference server whose prefix (KV) cache fills towards a
plateau. Must not alarm.

A 1.7B-parameter bf16 GPT (d 4096, 8 layers) is loaded (weights copied from pinned host memory
at --load-gbps: a fast ramp), then the server answers requests in a loop.
Each request uses one of N known prompts (system prompts / documents,
2048-6144 tokens each), picked uniformly at random. The first time a prompt
is seen its prefill runs and its keys and values are kept in a prefix cache
(one [layers, 2, T, d] bf16 tensor per prompt, as radix/prefix caches do);
later requests reuse them and only decode --gen tokens (HF-style: the new
tokens' keys and values are concatenated per layer, transient).

Requests arrive at N / --tau-s per second (at speed 1), so the number of
distinct prompts seen grows like N (1 - exp(-t / tau)): the cache grows
fast at first and ever slower towards its plateau. N is chosen so the full
cache puts the GPU at --target-frac of its memory. A forecaster that
extrapolates the early rate calls an OOM that never comes. Where the first
requests, all new, would keep the server busier than 60 % of the time (the
cost of one new request is measured before serving), tau is raised: else
the prefill, not the arrivals, sets the pace, and the fill grows at one
pace for its first tens of seconds, like a leak (the H200 sets of 2026-12
at tau 10-30 s). The plateau is reached after about 3 tau: plan --seconds
for it (the truth's plan gives expected_fraction_cached_at_end).

Ground truth: expect "no_alarm"; growth_start = the first request (weights
loaded); growth_end is left null (the approach is asymptotic; the truth
file's plan gives tau and the plateau); no OOM.

variant leak: the same server, with a leak beneath the cache: every request
keeps a float32 copy of the first tokens of its prompt's cache entry (all
layers' keys and values) in a list "for an attention debug view" that is
never cleared. The cache plateaus at
--leak-target-frac (default 0.5) of the GPU and the list grows at a steady
pace sized so that it takes the rest in --growth-s (default 120 s at speed
1): expect "oom". The cache's early growth hides the leak's; a detector that
takes the slowing of the sum for a plateau misses it.
"""

import time

import common as C

# The share of the server's time the first (all new) requests may take:
# above it the prefill, not the arrivals, sets the pace of the fill.
MAX_BUSY = 0.6


def main():
    p = C.base_parser("kv_plateau", __doc__, seconds=90, variants=["default", "leak"], target_frac=0.8,
                      growth_s=120)
    p.add_argument("--tau-s", type=float, default=20.0,
                   help="time constant of the cache fill at speed 1 (raised where the server cannot take new "
                        "prompts that fast: the truth's plan has tau_s_asked and tau_s_speed1)")
    p.add_argument("--gen", type=int, default=4, help="tokens decoded per request")
    p.add_argument("--prompt-min", type=int, default=2048)
    p.add_argument("--prompt-max", type=int, default=6144)
    p.add_argument("--load-gbps", type=float, default=10.0, help="weights load rate at speed 1 (GB/s)")
    p.add_argument("--d", type=int, default=4096)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--leak-target-frac", type=float, default=0.5,
                   help="variant leak: share of the GPU the cache's plateau puts it at (default 0.5)")
    args = p.parse_args()
    leak = args.variant == "leak"
    if leak:
        args.target_frac = args.leak_target_frac
    run = C.Run("kv_plateau", args, expect="oom" if leak else "no_alarm",
                note="prefix KV cache over a finite prompt set: grows like 1-exp(-t/tau) to a plateau"
                + ("; each request keeps an fp32 copy of part of its cache entry (a leak beneath)" if leak else ""))
    C.main_for(run, body)


def body(run):
    import math
    import random

    import torch.nn.functional as F

    from nets import GPT

    torch, dev = run.setup_torch()
    a = run.args
    z = C.dry_dims(run, vocab=32000, d=a.d, layers=a.layers, heads=32, max_t=8192)
    V, d, L, H = z["vocab"], z["d"], z["layers"], z["heads"]
    hd = d // H
    lo, hi = (a.prompt_min, a.prompt_max) if not run.dry else (8, 24)
    run.set_phase("load_weights")
    with torch.device("meta"):
        model = GPT(vocab=V, d=d, layers=L, heads=H, max_t=z["max_t"]).to(torch.bfloat16)
    C.load_weights(run, model, gbps=a.load_gbps * a.speed)
    model.eval()
    torch.set_grad_enabled(False)

    def layer_kv(blk, h):
        """q, k, v of one layer for h [T, d]: each [H, T, hd]."""
        T = h.shape[0]
        q, k, v = blk.qkv(blk.ln1(h)).view(T, 3, H, hd).permute(1, 2, 0, 3)
        return q, k, v

    def finish_layer(blk, x, y):
        x = x + blk.proj(y.transpose(0, 1).reshape(x.shape[0], d))
        return x + blk.fc2(blk.act(blk.fc1(blk.ln2(x))))

    def prefill(tokens):
        """Runs the prompt; returns its cache entry [L, 2, T, d]."""
        T = tokens.shape[0]
        entry = torch.empty(L, 2, T, d, dtype=torch.bfloat16, device=dev)
        x = model.tok(tokens) + model.pos(torch.arange(T, device=dev))
        for i, blk in enumerate(model.blocks):
            q, k, v = layer_kv(blk, x)
            entry[i, 0].copy_(k.transpose(0, 1).reshape(T, d))
            entry[i, 1].copy_(v.transpose(0, 1).reshape(T, d))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = finish_layer(blk, x, y)
        return entry

    def decode(entry, first, n):
        """Greedy decoding of n tokens after the cached prompt."""
        T = entry.shape[2]
        extra_k = [None] * L
        extra_v = [None] * L
        tok = first
        out = []
        for j in range(n):
            x = model.tok(tok.view(1)) + model.pos(torch.tensor([min(T + j, z["max_t"] - 1)], device=dev))
            for i, blk in enumerate(model.blocks):
                q, k, v = layer_kv(blk, x)
                extra_k[i] = k if extra_k[i] is None else torch.cat([extra_k[i], k], dim=1)
                extra_v[i] = v if extra_v[i] is None else torch.cat([extra_v[i], v], dim=1)
                kk = torch.cat([entry[i, 0].view(T, H, hd).transpose(0, 1), extra_k[i]], dim=1)
                vv = torch.cat([entry[i, 1].view(T, H, hd).transpose(0, 1), extra_v[i]], dim=1)
                y = F.scaled_dot_product_attention(q, kk, vv)
                x = finish_layer(blk, x, y)
            tok = model.head(model.ln_f(x)).argmax(-1)
            out.append(tok)
        return out

    # the prompt set, sized so the full cache lands at the target
    rng = random.Random(a.seed)
    lengths = [rng.randint(lo, hi) for _ in range(100000)]
    per_token = L * 2 * d * 2
    probe = torch.randint(0, V, (hi,), device=dev)
    run.set_phase("probe")

    def one_request():
        en = prefill(probe)
        decode(en, probe[:1], a.gen)
        return en

    e, peak, _ = C.measure_peak(run, one_request)
    del e, probe
    working = int(peak - hi * per_token) + 256 * C.MIB
    cache_budget = C.target_fill(run, working=working, note="the prefix cache at its plateau")
    n, total = 0, 0
    while n < len(lengths) and total + lengths[n] * per_token <= cache_budget:
        total += lengths[n] * per_token
        n += 1
    n = max(n, 4)
    lengths = lengths[:n]
    prompts = [torch.randint(0, V, (t,), device=dev) for t in lengths]
    # What one new request costs, warmed up (prefill and decode of a prompt
    # of the mean length): the server takes new prompts no faster than
    # that. Planned faster, the fill is set by the prefill and grows at
    # one pace until late, not ever slower from the start as the arrivals
    # would make it (the H200 sets of 2026-12: 204 prompts at tau 10-30 s,
    # 7-20 new a second planned, about 5 served; the fill looked like a
    # leak for its first 20-25 s). So tau is raised until the first
    # arrivals ask for at most MAX_BUSY of the server's time.
    sample = prompts[max(range(n), key=lambda i: -abs(lengths[i] - sum(lengths) / n))]
    C.sync(run)
    t0 = time.monotonic()
    decode(prefill(sample), sample[-1:], a.gen)
    C.sync(run)
    new_request_s = time.monotonic() - t0
    tau_min = n * a.speed * new_request_s / MAX_BUSY
    tau = max(a.tau_s, tau_min)
    rate = n / tau  # requests per second at speed 1
    run.plan.update({"prompts": n, "plateau_cache_bytes": sum(lengths) * per_token, "tau_s_speed1": tau,
                     "tau_s_asked": a.tau_s, "new_request_s": round(new_request_s, 4),
                     "requests_per_s_speed1": rate, "kv_bytes_per_token": per_token})
    if tau > a.tau_s:
        run.event("tau_raised", asked_s=a.tau_s, tau_s=round(tau, 2),
                  new_per_s_asked=round(n * a.speed / a.tau_s, 2), new_per_s_served=round(1 / new_request_s, 2))
    # The leak (variant leak): the share of each prompt's cache entry kept
    # as float32, so the list takes what the plateau leaves in --growth-s
    # at speed 1.
    keep_frac = 0.0
    if a.variant == "leak":
        total_bytes = run.plan.get("total_bytes") or 0
        room = total_bytes - run.plan.get("used_before_fill_bytes", 0) - cache_budget - working
        mean_t = sum(lengths) / len(lengths)
        per_request = mean_t * per_token * 2  # the whole entry, fp32
        keep_frac = min(1.0, max(0.0, room) / (a.growth_s * rate * per_request)) if not run.dry else 0.5
        run.plan.update({"leak_keep_frac": round(keep_frac, 4),
                         "leak_bytes_per_s_speed1": int(keep_frac * per_request * rate),
                         "planned_oom_after_growth_start_s": a.growth_s / a.speed})

    run.set_phase("serve")
    cache = {}
    debug_keys = []  # the leak (variant leak): never cleared
    pacer = run.pacer(rate)
    served = 0
    run.mark_growth_start(what="prefix_cache_fill", tau_s=tau / a.speed, plateau_bytes=sum(lengths) * per_token)
    left = max(0.0, a.seconds - run.elapsed())
    run.plan["expected_fraction_cached_at_end"] = round(1 - math.exp(-left * a.speed / tau), 3)
    while not run.time_up():
        k = rng.randrange(n)
        entry = cache.get(k)
        if entry is None:
            entry = cache[k] = prefill(prompts[k])
        decode(entry, prompts[k][-1:], a.gen)
        if keep_frac > 0:
            rows = max(1, int(entry.shape[2] * keep_frac))
            debug_keys.append(entry[:, :, :rows].float())
        served += 1
        run.tick(served, cached=len(cache), of=n)
        pacer.wait()
    run.extra["final_cached_prompts"] = len(cache)


if __name__ == "__main__":
    main()

"""A stand-in for `torch` and `torch.cuda`, enough for vramwatch_torch: the
caching allocator's statistics as torch.cuda.memory_stats() returns them
(the same flattened, sorted keys), memory_snapshot() segments, and switches
to make it fail or to tell whether CUDA was touched.

Install with `fake_torch.install()`; it puts the modules in sys.modules the
way `import torch` would (so `import torch` afterwards returns the fake).
"""

import collections
import sys
import types

POOLS = ("all", "large_pool", "small_pool")
METRICS = ("current", "peak", "allocated", "freed")
ARRAY_STATS = (
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
)


def nested_stats(allocated=0, reserved=0, active=None, inactive_split=0,
                 allocated_peak=None, reserved_peak=None, active_peak=None,
                 inactive_split_peak=None, retries=0, ooms=0, allocations=None):
    """The nested dict torch._C._cuda_memoryStats() returns, filled with
    these figures (pool "all"; the large pool holds the same, the small pool
    nothing)."""
    active = allocated if active is None else active
    if allocations is None:
        allocations = 1 if (allocated or reserved) else 0

    def arr(current, peak):
        one = {"current": current, "peak": peak, "allocated": max(peak, current), "freed": 0}
        zero = {m: 0 for m in METRICS}
        return {"all": dict(one), "large_pool": dict(one), "small_pool": zero}

    def pk(v, p):
        return v if p is None else p

    return {
        "num_alloc_retries": retries,
        "num_ooms": ooms,
        "max_split_size": -1,
        "num_sync_all_streams": 0,
        "num_device_alloc": 0,
        "num_device_free": 0,
        "allocation": arr(allocations, allocations),
        "segment": arr(1 if reserved else 0, 1 if reserved else 0),
        "active": arr(1 if active else 0, 1 if active else 0),
        "inactive_split": arr(1 if inactive_split else 0, 1 if inactive_split else 0),
        "allocated_bytes": arr(allocated, pk(allocated, allocated_peak)),
        "reserved_bytes": arr(reserved, pk(reserved, reserved_peak)),
        "active_bytes": arr(active, pk(active, active_peak)),
        "inactive_split_bytes": arr(inactive_split, pk(inactive_split, inactive_split_peak)),
        "requested_bytes": arr(allocated, pk(allocated, allocated_peak)),
        "oversize_allocations": {m: 0 for m in METRICS},
        "oversize_segments": {m: 0 for m in METRICS},
    }


def flatten(nested):
    """torch.cuda.memory_stats()'s flattening: dotted keys, sorted."""
    result = []

    def add(prefix, obj):
        if isinstance(obj, dict):
            if prefix:
                prefix += "."
            for k, v in obj.items():
                add(prefix + k, v)
        else:
            result.append((prefix, obj))

    add("", nested)
    result.sort()
    return collections.OrderedDict(result)


class FakeCuda(types.ModuleType):
    """torch.cuda. `devices` maps an index to its figures (the arguments
    of nested_stats); an index not in it has never been used (its stats are
    all zeros, as in PyTorch)."""

    def __init__(self):
        super().__init__("torch.cuda")
        self.initialized = False
        self.devices = {}
        self.count = 0
        self.segments = []
        self.fail = None  # an exception instance memory_stats raises
        self.calls = collections.Counter()
        self.uuids = {}

    # The API vramwatch_torch may use ------------------------------------

    def is_initialized(self):
        self.calls["is_initialized"] += 1
        return self.initialized

    def device_count(self):
        self.calls["device_count"] += 1
        return self.count

    def memory_stats(self, device=None):
        self.calls["memory_stats"] += 1
        if self.fail is not None:
            raise self.fail
        if not self.initialized:
            return {}
        return flatten(nested_stats(**self.devices.get(device, {})))

    def memory_stats_as_nested_dict(self, device=None):
        self.calls["memory_stats_as_nested_dict"] += 1
        if self.fail is not None:
            raise self.fail
        if not self.initialized:
            return {}
        return nested_stats(**self.devices.get(device, {}))

    def memory_snapshot(self):
        self.calls["memory_snapshot"] += 1
        return list(self.segments)

    def get_device_properties(self, device):
        self.calls["get_device_properties"] += 1
        return types.SimpleNamespace(
            name="Fake GPU", total_memory=141 << 30, uuid=self.uuids.get(device, "%08x-0000-0000-0000-000000000000" % device)
        )

    # What a program would do ---------------------------------------------

    def init(self, count=1):
        """As the first CUDA call of a program does."""
        self.initialized = True
        self.count = count

    def use(self, index, **figures):
        """Device `index` now holds these figures (nested_stats' arguments)."""
        self.devices[index] = figures


def install(version="2.99.0+fake", nested=True):
    """Puts a fresh fake torch in sys.modules; returns its torch.cuda.
    nested=False leaves out memory_stats_as_nested_dict (older PyTorch has
    memory_stats only)."""
    torch = types.ModuleType("torch")
    torch.__version__ = version
    cuda = FakeCuda()
    if not nested:
        cuda.memory_stats_as_nested_dict = None
    torch.cuda = cuda
    sys.modules["torch"] = torch
    sys.modules["torch.cuda"] = cuda
    return cuda


def uninstall():
    sys.modules.pop("torch", None)
    sys.modules.pop("torch.cuda", None)


def segment(device, blocks):
    """A memory_snapshot() segment: `blocks` are (size, state) pairs."""
    return {
        "device": device,
        "address": 0,
        "total_size": sum(s for s, _ in blocks),
        "allocated_size": sum(s for s, st in blocks if st == "active_allocated"),
        "active_size": sum(s for s, st in blocks if st != "inactive"),
        "segment_type": "large",
        "blocks": [{"size": s, "requested_size": s, "state": st} for s, st in blocks],
    }

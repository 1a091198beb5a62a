"""Reads the caching allocator's figures from a `torch` module the program
has already imported. Never imports torch, never initialises CUDA, never
touches a device the program has not used."""

import sys
import time

# Figures of torch.cuda.memory_stats() and the names they get in the file:
# the path in memory_stats_as_nested_dict(), joined by dots in memory_stats().
STAT_KEYS = (
    ("allocated", ("allocated_bytes", "all", "current")),
    ("reserved", ("reserved_bytes", "all", "current")),
    ("active", ("active_bytes", "all", "current")),
    ("inactive_split", ("inactive_split_bytes", "all", "current")),
    ("allocated_peak", ("allocated_bytes", "all", "peak")),
    ("reserved_peak", ("reserved_bytes", "all", "peak")),
    ("active_peak", ("active_bytes", "all", "peak")),
    ("inactive_split_peak", ("inactive_split_bytes", "all", "peak")),
    ("num_alloc_retries", ("num_alloc_retries",)),
    ("num_ooms", ("num_ooms",)),
)
# What tells a device the program has used from one it has not.
USED_KEYS = (
    ("reserved_bytes", "all", "peak"),
    ("allocation", "all", "allocated"),
    ("num_alloc_retries",),
    ("num_ooms",),
)


def _nested_get(stats, path):
    for key in path:
        if not isinstance(stats, dict):
            return 0
        stats = stats.get(key, 0)
    return stats if isinstance(stats, int) else 0


def _flat_get(stats, path):
    value = stats.get(".".join(path), 0)
    return value if isinstance(value, int) else 0


def read_stats(cuda, index):
    """`(stats, getter)` for one device. memory_stats_as_nested_dict() is
    used where it exists: memory_stats() builds the same figures and then
    flattens and sorts ~150 keys, which costs about as much again."""
    nested = getattr(cuda, "memory_stats_as_nested_dict", None)
    if nested is not None:
        return nested(index), _nested_get
    return cuda.memory_stats(index), _flat_get


# A device whose stats were empty is asked again only this often (seconds):
# memory_stats() builds a dict of ~100 entries, not worth doing twice a second
# for each of eight GPUs the program never touches.
IDLE_RECHECK_S = 5.0

# Share of wall time the largest-free-block probe may take. memory_snapshot()
# walks every block of every segment (and holds the allocator's lock while it
# copies them), so its cost grows with the cache: the probe runs again only
# after cost / SNAPSHOT_BUDGET seconds, and never more often than every
# SNAPSHOT_MIN_PERIOD_S.
SNAPSHOT_BUDGET = 0.0005
SNAPSHOT_MIN_PERIOD_S = 2.0


def loaded(name):
    """sys.modules[name] once its import has finished, else None: a module
    still being imported by the main thread is left alone."""
    mod = sys.modules.get(name)
    if mod is None:
        return None
    spec = getattr(mod, "__spec__", None)
    if spec is not None and getattr(spec, "_initializing", False):
        return None
    return mod


def loaded_cuda():
    """torch.cuda when torch is imported and CUDA is initialised, else None."""
    if loaded("torch") is None:
        return None
    cuda = loaded("torch.cuda")
    if cuda is None:
        return None
    if not cuda.is_initialized():
        return None
    return cuda


def _largest_free_by_device(segments):
    """The largest inactive (cached, free) block per device index."""
    largest = {}
    for seg in segments:
        dev = seg.get("device")
        best = largest.get(dev, 0)
        for block in seg.get("blocks", ()):
            if block.get("state") == "inactive":
                size = block.get("size", 0)
                if size > best:
                    best = size
        largest[dev] = best
    return largest


class Collector:
    """Keeps what does not change (device UUIDs) and the schedules (idle
    devices, the largest-free probe) between reads."""

    def __init__(self, largest_free=True, clock=time.monotonic, perf_clock=time.perf_counter):
        self.largest_free = largest_free
        self._clock = clock
        self._perf = perf_clock
        self._idle_until = {}
        self._uuids = {}
        self._next_snapshot = 0.0
        self._largest = {}
        self._largest_t_ms = None
        self.snapshot_us = None

    def _uuid(self, cuda, index):
        if index not in self._uuids:
            uuid = None
            try:
                uuid = getattr(cuda.get_device_properties(index), "uuid", None)
                if uuid is not None:
                    uuid = str(uuid)
            except Exception:
                uuid = None
            self._uuids[index] = uuid
        return self._uuids[index]

    def devices(self, cuda, t_ms):
        """One dict per device the program has used, from `cuda` (the
        initialised torch.cuda module, or None: then [])."""
        if cuda is None:
            return []
        now = self._clock()
        out = []
        for index in range(cuda.device_count()):
            if self._idle_until.get(index, 0.0) > now:
                continue
            stats, get = read_stats(cuda, index)
            # An untouched device has every figure at 0 (or no stats at all).
            used = stats and any(get(stats, path) > 0 for path in USED_KEYS)
            if not used:
                self._idle_until[index] = now + IDLE_RECHECK_S
                continue
            self._idle_until.pop(index, None)
            dev = {"index": index, "uuid": self._uuid(cuda, index)}
            for name, path in STAT_KEYS:
                dev[name] = get(stats, path)
            out.append(dev)
        if out and self.largest_free:
            self._probe_largest_free(cuda, now, t_ms)
        for dev in out:
            if not self.largest_free:
                dev["largest_free"] = dev["largest_free_t_ms"] = None
            else:
                largest = self._largest.get(dev["index"])
                dev["largest_free"] = largest
                dev["largest_free_t_ms"] = (
                    self._largest_t_ms if largest is not None else None
                )
        return out

    def _probe_largest_free(self, cuda, now, t_ms):
        if now < self._next_snapshot:
            return
        snapshot = getattr(cuda, "memory_snapshot", None)
        if snapshot is None:
            self.largest_free = False
            return
        t0 = self._perf()
        try:
            segments = snapshot()
        finally:
            cost = self._perf() - t0
            self.snapshot_us = int(cost * 1e6)
            self._next_snapshot = now + max(SNAPSHOT_MIN_PERIOD_S, cost / SNAPSHOT_BUDGET)
        self._largest = _largest_free_by_device(segments)
        self._largest_t_ms = t_ms

"""Publishes the PyTorch CUDA caching allocator's figures for vramwatch.

    import vramwatch_torch
    vramwatch_torch.start()

A daemon thread writes, twice a second, what torch.cuda.memory_stats() says
for each device the program uses (allocated, reserved, active and
inactive-split bytes, their peaks, allocator retries and OOMs, the largest
free cached block) to `$XDG_RUNTIME_DIR/vramwatch/<pid>.json` (or
`/tmp/vramwatch-<uid>/<pid>.json`), where vramwatch shows them next to the
process. The file is removed when the process exits (on SIGTERM too with
start(handle_signals=True)).

It never imports torch (it waits until the program has), never initialises
CUDA, and never raises into the program once started. The file format and
the overhead are described in docs/pytorch.md of the vramwatch repository.
"""

import os
import threading
import warnings

from . import _files, _publisher
from ._files import UnsafeDirectory
from ._publisher import SCHEMA_VERSION, VERSION

__all__ = [
    "start",
    "stop",
    "publish_now",
    "path",
    "is_running",
    "default_directory",
    "UnsafeDirectory",
    "SCHEMA_VERSION",
    "__version__",
]
__version__ = VERSION

DEFAULT_INTERVAL = 0.5
MIN_INTERVAL = 0.05
MAX_INTERVAL = 60.0

# Set to 1 to make start() do nothing (for a run where you do not want it).
DISABLE_ENV = "VRAMWATCH_TORCH_DISABLE"

_start_lock = threading.Lock()
_warned = set()


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        warnings.warn("vramwatch_torch: " + message, RuntimeWarning, stacklevel=3)


def default_directory():
    """Where the files go: `$XDG_RUNTIME_DIR/vramwatch`, else
    `/tmp/vramwatch-<uid>`."""
    return _files.default_directory()


def start(interval=DEFAULT_INTERVAL, directory=None, largest_free=True, handle_signals=False):
    """Starts publishing (once per process: later calls return the running
    publisher's state). Returns True when publishing, False when it could
    not start (the reason is given once as a RuntimeWarning; the program
    goes on either way).

    interval: seconds between publishes, 0.05 to 60 (default 0.5).
    directory: where to write; default `default_directory()`.
    largest_free: also find the largest free cached block through
        torch.cuda.memory_snapshot(), at a rate kept under 0.05 % of the
        time (see docs/pytorch.md); False to skip it.
    handle_signals: also remove the file on SIGTERM/SIGHUP where the program
        leaves them at their default action (off by default: a handler is
        visible to the program and to frameworks that chain handlers; a
        file left behind is harmless, see docs/pytorch.md).

    Raises ValueError for an interval out of range (a mistake in the call,
    not at run time).
    """
    if isinstance(interval, bool) or not isinstance(interval, (int, float)):
        raise ValueError("vramwatch_torch.start: interval must be a number of seconds, got %r" % (interval,))
    if not (MIN_INTERVAL <= interval <= MAX_INTERVAL):
        raise ValueError(
            "vramwatch_torch.start: interval must be between %s and %s seconds, got %s"
            % (MIN_INTERVAL, MAX_INTERVAL, interval)
        )
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return False
    with _start_lock:
        current = _publisher.current()
        if current is not None and current.pid == os.getpid():
            return True
        try:
            where = directory if directory is not None else _files.default_directory()
            _files.ensure_private_directory(where)
            _files.sweep_dead(where)
            p = _publisher.Publisher(where, float(interval), bool(largest_free))
            # A first publish before returning: the file exists at once, and a
            # directory we cannot write to is reported here, not lost in the
            # thread.
            p.publish_or_raise()
        except Exception as e:  # UnsafeDirectory, OSError, ...
            _warn_once(("start", type(e).__name__, str(e)), "not publishing: %s" % e)
            return False
        if handle_signals:
            p.install_signal_handlers()
        _publisher.set_current(p)
        p.start_thread()
        return True


def stop():
    """Stops publishing and removes the file. Safe to call at any time."""
    with _start_lock:
        p = _publisher.current()
        _publisher.set_current(None)
    if p is not None:
        try:
            p.stop()
        except Exception:
            pass


def publish_now():
    """Publishes at once (for a figure right after an event, say an OOM you
    caught). Returns True on success; never raises."""
    p = _publisher.current()
    if p is None:
        return False
    return p.publish()


def path():
    """The file this process publishes to, or None when not publishing."""
    p = _publisher.current()
    return p.path if p is not None else None


def is_running():
    p = _publisher.current()
    return p is not None and p.pid == os.getpid()

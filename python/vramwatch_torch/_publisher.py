"""The publishing thread and its life cycle: start, publish, stop, and the
removal of the file when the process ends."""

import atexit
import json
import logging
import os
import select
import signal
import threading
import time

from . import _collect, _files

SCHEMA_VERSION = 1
VERSION = "0.1.0"

log = logging.getLogger("vramwatch_torch")

# Signals whose default action ends the process without running atexit: when
# the program leaves them at their default, a handler removes the file and
# then ends the process the default way (same exit status).
FATAL_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def _env(name, cap=1024):
    """An environment variable as valid UTF-8 (undecodable bytes replaced,
    so the JSON stays readable by any parser), capped; None when unset."""
    value = os.environ.get(name)
    if value is None:
        return None
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")[:cap]


class Publisher:
    def __init__(self, directory, interval, largest_free):
        self.directory = directory
        self.interval = interval
        self.pid = os.getpid()
        self.start_time = _files.start_time_of()
        self.path = _files.file_path(directory, self.pid)
        self.collector = _collect.Collector(largest_free=largest_free)
        self.seq = 0
        self.publish_us = None
        self.errors_seen = set()
        self.failures = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        # The read and write ends of the signal wake pipe, when in use.
        self._wake_r = None
        self._wake_w = None
        self._signals = set()

    # -- the thread -------------------------------------------------------

    def start_thread(self):
        self._thread = threading.Thread(
            target=self._run, name="vramwatch-torch", daemon=True
        )
        self._thread.start()

    def _run(self):
        # start() published once already: wait first.
        try:
            while not self._sleep():
                self.publish()
        except BaseException:  # nothing may escape into the program
            pass

    def _sleep(self):
        """Waits one interval; True when the thread should end. With the
        wake pipe (see install_signal_handlers) the wait also watches for a
        fatal signal the main thread has not handled."""
        if self._wake_r is None:
            return self._stop.wait(self.interval)
        try:
            ready, _, _ = select.select([self._wake_r], [], [], self.interval)
            data = os.read(self._wake_r, 512) if ready else b""
        except (OSError, ValueError):
            return self._stop.wait(self.interval)
        for signum in data:
            if signum in self._signals and self._handler_is_ours(signum):
                self._die_of(signum, main_thread=False)
        return self._stop.is_set()

    # -- one publish ------------------------------------------------------

    def document(self):
        t_ms = int(time.time() * 1000)
        torch = _collect.loaded("torch")
        version = getattr(torch, "__version__", None)
        cuda = None
        try:
            cuda = _collect.loaded_cuda()
            devices = self.collector.devices(cuda, t_ms)
            error = None
        except Exception as e:
            # Said in the file (vramwatch can show it) and logged once.
            devices = []
            error = ("%s: %s" % (type(e).__name__, e))[:200]
            self._log_once(e)
        return {
            "schema": SCHEMA_VERSION,
            "writer": "vramwatch_torch " + VERSION,
            "pid": self.pid,
            "start_time": self.start_time,
            "t_ms": t_ms,
            "seq": self.seq,
            "interval_ms": int(self.interval * 1000),
            "torch_version": str(version) if version is not None else None,
            "cuda_initialized": cuda is not None,
            "alloc_conf": _env("PYTORCH_CUDA_ALLOC_CONF") or _env("PYTORCH_ALLOC_CONF"),
            "cuda_visible_devices": _env("CUDA_VISIBLE_DEVICES"),
            "publish_us": self.publish_us,
            "snapshot_us": self.collector.snapshot_us,
            "devices": devices,
            "error": error,
        }

    def publish(self):
        """Collects and writes once. Never raises: a failure is logged at
        debug level, once per kind of failure. Returns True on success."""
        try:
            return self.publish_or_raise()
        except Exception as e:
            self.failures += 1
            self._log_once(e)
            return False

    def publish_or_raise(self):
        """As publish(), but a failure to write raises (OSError)."""
        if os.getpid() != self.pid:
            return False
        t0 = time.perf_counter()
        with self._lock:
            if self._stop.is_set():
                return False
            data = json.dumps(self.document(), separators=(",", ":")).encode()
            _files.write_atomically(self.directory, self.pid, data)
            self.seq += 1
        self.publish_us = int((time.perf_counter() - t0) * 1e6)
        self.failures = 0
        return True

    def _log_once(self, e):
        key = (type(e).__name__, str(e))
        if key not in self.errors_seen and len(self.errors_seen) < 32:
            self.errors_seen.add(key)
            log.debug("vramwatch_torch: publishing failed: %r", e, exc_info=True)

    # -- the end ----------------------------------------------------------

    def stop(self):
        """Stops publishing and removes the file (only in the process that
        wrote it: a forked child leaves its parent's file alone). A publish
        in progress finishes first (the lock); none starts after."""
        self._stop.set()
        if self._wake_w is not None:
            try:
                os.write(self._wake_w, b"\0")
            except OSError:
                pass
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # Woken by the event or the byte above: returns at once unless a
            # publish is in progress.
            thread.join(timeout=1.0)
        if os.getpid() == self.pid:
            acquired = self._lock.acquire(timeout=2.0)
            try:
                self.remove_file()
            finally:
                if acquired:
                    self._lock.release()
        self.restore_signal_handlers()

    def remove_file(self):
        if os.getpid() == self.pid:
            _files.remove_quietly(_files.temp_path(self.directory, self.pid))
            _files.remove_quietly(self.path)

    # -- signals ----------------------------------------------------------

    def install_signal_handlers(self):
        """For SIGTERM and SIGHUP left at their default action (only: a
        program's own handlers are never replaced), installs a handler that
        removes the file and then dies of the signal as the default would.

        A Python handler runs in the main thread between bytecodes, so a
        main thread stuck in a long C call (a hung collective, say) would
        hold it back, and the signal would no longer end the process. So the
        handlers go in only together with a wakeup fd (signal.set_wakeup_fd)
        that wakes the publishing thread, which then ends the process itself
        at once. Where the program already has a wakeup fd of its own
        (asyncio, say), nothing is installed: atexit still covers a normal
        exit. Returns the signals handled."""
        if threading.current_thread() is not threading.main_thread():
            return set()
        wanted = []
        for signum in FATAL_SIGNALS:
            try:
                if signal.getsignal(signum) is signal.SIG_DFL:
                    wanted.append(signum)
            except (OSError, ValueError):
                pass
        if not wanted:
            return set()
        try:
            r, w = os.pipe()
        except OSError:
            return set()
        try:
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (OSError, ValueError, TypeError):
            previous = None
        if previous != -1:
            # Failed, or the program has a wakeup fd: leave it be.
            if previous is not None:
                signal.set_wakeup_fd(previous)
            os.close(r)
            os.close(w)
            return set()
        self._wake_r, self._wake_w = r, w
        for signum in wanted:
            try:
                signal.signal(signum, self._on_signal)
                self._signals.add(signum)
            except (OSError, ValueError, RuntimeError):
                pass
        return set(self._signals)

    def _handler_is_ours(self, signum):
        try:
            return signal.getsignal(signum) == self._on_signal
        except (OSError, ValueError):
            return False

    def _on_signal(self, signum, frame):
        if not self._handler_is_ours(signum):
            # Called by a handler installed after ours that chains to the
            # one it found (PyTorch Lightning composes handlers so): the
            # signal is that handler's to act on, and the process may well
            # go on (a graceful stop). Do nothing; atexit covers the end.
            return
        self._die_of(signum, main_thread=True)

    def _die_of(self, signum, main_thread):
        """Removes the file, then ends the process with `signum`'s default
        action, so the exit status is what it would have been without us."""
        if os.getpid() == self.pid:
            self._stop.set()
            self.remove_file()
        if main_thread:
            signal.signal(signum, signal.SIG_DFL)
        else:
            # signal.signal() works only in the main thread; set the
            # default disposition through libc, or exit as a shell would.
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
                libc.signal.restype = ctypes.c_void_p
                libc.signal(signum, None)
            except Exception:
                os._exit(128 + signum)
        os.kill(os.getpid(), signum)

    def restore_signal_handlers(self):
        """Puts the default action back where ours is still installed, and
        unhooks and closes the wake pipe. Only the main thread may do this;
        the pipe is closed only once no thread waits on it and the signal
        module no longer writes to it (a closed fd number could be reused by
        the program's own files)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in list(self._signals):
            try:
                if self._handler_is_ours(signum):
                    signal.signal(signum, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        self._signals.clear()
        if self._wake_w is None:
            return
        _unhook_wakeup_fd(self._wake_w)
        thread = self._thread
        if thread is None or not thread.is_alive() or os.getpid() != self.pid:
            for fd in (self._wake_r, self._wake_w):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._wake_r = self._wake_w = None


def _unhook_wakeup_fd(fd):
    try:
        previous = signal.set_wakeup_fd(-1)
        if previous != fd:
            signal.set_wakeup_fd(previous)
    except (OSError, ValueError):
        pass


_current = None
_atexit_registered = False


def current():
    return _current


def set_current(publisher):
    global _current, _atexit_registered
    _current = publisher
    if not _atexit_registered:
        atexit.register(_at_exit)
        _atexit_registered = True


def _at_exit():
    p = _current
    if p is not None:
        try:
            p.stop()
        except Exception:
            pass


def _after_fork_in_child():
    """Threads do not survive fork: the child starts without a publisher (it
    may call start() for itself), with the signal dispositions it had before
    start(), and never touches the parent's file or wake pipe."""
    global _current
    p = _current
    _current = None
    if p is not None:
        try:
            p.restore_signal_handlers()
        except Exception:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

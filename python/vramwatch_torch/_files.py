"""Where the figures go and how they get there: the private directory, the
atomic write, the process start time vramwatch keys processes by, and the
sweep of files left behind by processes that died without cleaning up."""

import os
import stat

# The directory name under $XDG_RUNTIME_DIR, and the /tmp fallback's prefix.
DIR_NAME = "vramwatch"
FALLBACK_PREFIX = "/tmp/vramwatch-"


class UnsafeDirectory(Exception):
    """The publishing directory exists but is not ours alone."""


def default_directory():
    """`$XDG_RUNTIME_DIR/vramwatch` when that variable names an absolute
    directory, else `/tmp/vramwatch-<uid>` (vramwatch looks in both)."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if base and os.path.isabs(base) and os.path.isdir(base):
        return os.path.join(base, DIR_NAME)
    return FALLBACK_PREFIX + str(os.geteuid())


def ensure_private_directory(path):
    """Creates `path` with mode 0700 if it is missing; refuses (raises
    UnsafeDirectory) one that is a symlink, not a directory, not owned by
    the effective user, or open to group or others."""
    created = False
    try:
        os.mkdir(path, 0o700)
        created = True
    except FileExistsError:
        pass
    if created:
        # mkdir's mode is masked by the umask; make it exactly 0700.
        os.chmod(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory("%s is not a directory" % path)
    if st.st_uid != os.geteuid():
        raise UnsafeDirectory(
            "%s is owned by uid %d, not by us (uid %d)" % (path, st.st_uid, os.geteuid())
        )
    if st.st_mode & 0o077:
        raise UnsafeDirectory(
            "%s has mode %03o; it must be 0700 (chmod 700 %s)"
            % (path, stat.S_IMODE(st.st_mode), path)
        )
    return path


def file_path(directory, pid):
    return os.path.join(directory, "%d.json" % pid)


def temp_path(directory, pid):
    # A dot file: vramwatch reads only `<digits>.json`.
    return os.path.join(directory, ".%d.json.tmp" % pid)


_OPEN_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_TRUNC
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def write_atomically(directory, pid, data):
    """Writes `data` (bytes) to `<directory>/<pid>.json` so a reader sees
    either the previous content or the new one, never a mix: the bytes go to
    a temporary file in the same directory, which then replaces the target
    with one rename."""
    tmp = temp_path(directory, pid)
    fd = os.open(tmp, _OPEN_FLAGS, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)
    os.replace(tmp, file_path(directory, pid))


def remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _boot_time():
    with open("/proc/stat", "rb") as f:
        for line in f:
            if line.startswith(b"btime"):
                return int(line.split()[1])
    raise ValueError("/proc/stat has no btime line")


def start_time_of(pid="self"):
    """The process start time in unix seconds, computed as vramwatch (the
    Rust `sysinfo` crate) computes it: field 22 of /proc/<pid>/stat (clock
    ticks since boot) divided by CLK_TCK with integer division, plus `btime`
    from /proc/stat. None where /proc is not there."""
    try:
        with open("/proc/%s/stat" % pid, "rb") as f:
            data = f.read()
        # Field 2, the command, is in parentheses and may hold spaces or
        # parentheses itself: the fields after it start after the last ')'.
        fields = data[data.rindex(b")") + 1 :].split()
        # fields[0] is field 3 (state), so field 22 is fields[19].
        ticks = int(fields[19])
        hz = os.sysconf("SC_CLK_TCK")
        return ticks // hz + _boot_time()
    except (OSError, ValueError, IndexError):
        return None


def sweep_dead(directory):
    """Removes `<pid>.json` and temporary files of processes that no longer
    exist (killed with SIGKILL, say). Returns how many were removed."""
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        digits = name
        if digits.startswith("."):
            digits = digits[1:]
        for suffix in (".json.tmp", ".json"):
            if digits.endswith(suffix):
                digits = digits[: -len(suffix)]
                break
        else:
            continue
        if not digits.isdigit():
            continue
        if not os.path.exists("/proc/%s" % digits) and not _alive(int(digits)):
            remove_quietly(os.path.join(directory, name))
            removed += 1
    return removed


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        # EPERM: it exists, as someone else; a number no PID can be: not a
        # file we wrote, leave it alone.
        return True
    return True

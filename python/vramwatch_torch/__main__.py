"""python -m vramwatch_torch [options] script.py [args...]
python -m vramwatch_torch [options] -m module [args...]

Runs a script (or module) as __main__ with vramwatch_torch.start() called
first, the way `python -m cProfile` runs one: the script sees its own path
in sys.argv[0] and its arguments after it.
"""

import os
import runpy
import sys

import vramwatch_torch

USAGE = """\
usage: python -m vramwatch_torch [options] script.py [args...]
       python -m vramwatch_torch [options] -m module [args...]

Runs the script or module as __main__ with vramwatch_torch.start() called first.

options:
  --interval SECONDS   seconds between publishes, %s to %s (default %s)
  --no-largest-free    do not probe the largest free cached block
  --handle-signals     also remove the file on SIGTERM/SIGHUP (see docs/pytorch.md)
  -h, --help           show this help
""" % (
    vramwatch_torch.MIN_INTERVAL,
    vramwatch_torch.MAX_INTERVAL,
    vramwatch_torch.DEFAULT_INTERVAL,
)


class UsageError(Exception):
    pass


def parse(argv):
    """Returns (options dict, ("script"|"module", target), rest of argv)."""
    opts = {"interval": vramwatch_torch.DEFAULT_INTERVAL, "largest_free": True, "handle_signals": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            return opts, ("help", None), []
        if arg == "--interval" or arg.startswith("--interval="):
            if arg == "--interval":
                if i + 1 >= len(argv):
                    raise UsageError("--interval needs a value in seconds")
                value = argv[i + 1]
                i += 2
            else:
                value = arg.split("=", 1)[1]
                i += 1
            try:
                seconds = float(value)
            except ValueError:
                raise UsageError("--interval: %r is not a number of seconds" % value)
            lo, hi = vramwatch_torch.MIN_INTERVAL, vramwatch_torch.MAX_INTERVAL
            if not (lo <= seconds <= hi):
                raise UsageError("--interval: %s is out of range (%s to %s seconds)" % (value, lo, hi))
            opts["interval"] = seconds
            continue
        if arg == "--no-largest-free":
            opts["largest_free"] = False
            i += 1
            continue
        if arg == "--handle-signals":
            opts["handle_signals"] = True
            i += 1
            continue
        if arg == "-m":
            if i + 1 >= len(argv):
                raise UsageError("-m needs a module name")
            return opts, ("module", argv[i + 1]), argv[i + 2 :]
        if arg == "--":
            i += 1
            if i >= len(argv):
                break
            return opts, ("script", argv[i]), argv[i + 1 :]
        if arg.startswith("-"):
            raise UsageError("unknown option %r" % arg)
        return opts, ("script", arg), argv[i + 1 :]
    raise UsageError("no script or -m module to run")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts, (kind, target), rest = parse(argv)
    except UsageError as e:
        sys.stderr.write("python -m vramwatch_torch: %s\n\n%s" % (e, USAGE))
        return 2
    if kind == "help":
        sys.stdout.write(USAGE)
        return 0
    if kind == "script" and not os.path.isfile(target):
        sys.stderr.write("python -m vramwatch_torch: can't open file %r: no such file\n" % target)
        return 2
    vramwatch_torch.start(
        interval=opts["interval"],
        largest_free=opts["largest_free"],
        handle_signals=opts["handle_signals"],
    )
    if kind == "script":
        sys.argv = [target] + rest
        # As `python script.py` does: the script's directory comes first.
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")
    else:
        sys.argv = [target] + rest
        sys.path[0] = os.getcwd()
        # alter_sys puts the module's file in sys.argv[0], as `python -m` does.
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""procmgr's python standby: --procmgr-warm=python:MOD[,MOD...] for an
unmodified script.

procmgr-rank runs the command's own interpreter on this module instead of
the script, ahead of time, as the rank's next generation:

    PYTHON -c <boot> MOD[,MOD...] -- [-u] [-B] script.py args...
    PYTHON -c <boot> MOD[,MOD...] -- [-u] [-B] -m module args...

It imports the modules (the expensive part: torch takes seconds), says
"ready" to procmgr (procmgr.ready()) and blocks. When the generation
starts it gets the generation's environment and runs the script in this
same process as `python script.py args` would: sys.argv, __main__ (runpy),
sys.path[0] the script's directory, the environment; its stdio, signal
dispositions, process group and binding are the ones procmgr-rank gave
this process, which are those of a cold start. A new standby is started
behind it for the generation after.

What must not happen before the generation starts, in the modules named:
nothing that depends on the generation (the rank, the master's address),
no CUDA context (it would be made before the rank's GPU is known to the
script), no connection to other ranks. Threads a module starts are kept
(this is the same process, not a fork), but they run before the
generation's environment is set: a module that reads the environment at
import reads the standby's (no RANK change after a replacement, restart
count unset). Check: PROCMGR_RESTART_COUNT is absent until the start.
"""
import os
import runpy
import sys

import procmgr


def _usage(msg):
    sys.stderr.write("procmgr: --procmgr-warm=python: %s\n" % msg)
    # Exits before ready: procmgr-rank starts the generation cold and says so.
    sys.exit(2)


def _parse(argv):
    """(modules, (kind, target, args), unbuffered) from this module's argv."""
    if len(argv) < 2 or argv[1] != "--":
        _usage("procmgr-rank's server needs MODS -- COMMAND")
    mods = [m for m in argv[0].split(",") if m]
    rest, unbuffered = argv[2:], False
    while rest and rest[0].startswith("-") and rest[0] != "-":
        opt = rest.pop(0)
        if opt == "-u":
            unbuffered = True
        elif opt in ("-B", "-E", "-s", "-I"):
            pass  # effects the server already has (or harmless to skip)
        elif opt == "-m":
            if not rest:
                _usage("-m needs a module")
            return mods, ("module", rest[0], rest[1:]), unbuffered
        else:
            _usage("the interpreter option %s is not supported (allowed before the script: "
                   "-u, -B, -E, -s, -I, -m MODULE)" % opt)
    if not rest:
        _usage("no script to run (the command is python with no script)")
    return mods, ("script", rest[0], rest[1:]), unbuffered


def _check_preload():
    """Say what the preloaded modules did that a standby should not have."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        sys.stderr.write("procmgr: --procmgr-warm=python: a CUDA context exists before the "
                         "generation started (made at import by a module named): its GPU "
                         "was chosen before the rank was known\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    mods, (kind, target, args), unbuffered = _parse(argv)
    for m in mods:
        __import__(m)
    _check_preload()
    if kind == "script" and not os.path.exists(target):
        _usage("can't open file %r" % target)
    if not procmgr.ready():
        # Not procmgr's standby (run by hand): just run it.
        pass
    if unbuffered:
        sys.stdout.reconfigure(write_through=True)
        sys.stderr.reconfigure(write_through=True)
    if kind == "module":
        sys.argv = [target] + list(args)
        sys.path[0] = os.getcwd()
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [target] + list(args)
        sys.path[0] = os.path.dirname(os.path.abspath(target))
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    main()

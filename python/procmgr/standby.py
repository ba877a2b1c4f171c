"""procmgr's python fork server: --procmgr-warm=python:MOD[,MOD...] for an
unmodified script.

procmgr-rank runs the command's own interpreter on this module instead of
the script, once per rank (not once per generation):

    PYTHON [OPTS] .../procmgr/standby.py MOD[,MOD...] -- [OPTS] script.py args...
    PYTHON [OPTS] .../procmgr/standby.py MOD[,MOD...] -- [OPTS] -m module args...

(OPTS: the command's own -u, -B, -E, -s, -I, -P, given to the server's
interpreter as to a cold start's. Run as a file, never `python -c`, which
puts the working directory first on sys.path: runtime/common/warm.h.)

Modules are found as `python script.py` finds them, in the server (MODS)
and in each generation: the script's own directory first (symlinks
resolved), never the working directory (-m: the working directory, as
`python -m`; -I, -P, PYTHONSAFEPATH: neither). A module another user
planted in a shared working directory is not imported.

It imports the modules once (the expensive part: torch takes seconds),
checks that nothing was done that a fork cannot carry (below), says
"ready" on procmgr's warm channel (PROCMGR_WARM_FD) and waits. At each
generation's start procmgr-rank sends the generation's environment
("env NAME=VALUE" lines, then "start GEN"); the server forks the
generation's process, which runs the script as `python script.py args`
would: sys.argv, __main__ (runpy), sys.path[0] the script's directory,
os.environ the step's plus the generation's, its own process group, the
stdio, signal dispositions, signal mask and CPU binding procmgr-rank gave
this server (those of a cold start), its exit status that of the script.
The fork is double: the middle process exits at once, so the generation's
process is reparented to procmgr-rank (a child subreaper), which waits for
it, signals its group and takes its stack like a cold start's; the server
says its pid ("pid N") and waits for the next generation. A restart costs
a fork, not an import.

What must not happen before the fork, in the modules named (checked
before "ready" and before each fork; the server then refuses: a line on
stderr, exit PM_WARM_REFUSED_EXIT, and every generation starts cold):
  - no thread: a fork keeps only the forking thread; another thread's
    locks (a BLAS or OpenMP pool, a logging handler's) stay held for ever
    in the child. /proc/self/task must list one thread.
  - no CUDA context (torch.cuda.is_initialized()): a context does not
    survive a fork, and its GPU would be chosen before the rank is known.
Not checked, said in docs/user-guide.md: nothing that depends on the
generation (the rank, the master's address), no connection to other
ranks, no open files the script expects fresh. The hash seed
(PYTHONHASHSEED) is the server's for every generation; random is
reseeded by Python at the fork, numpy's global generator here.
"""
import gc
import io
import os
import runpy
import socket
import sys
import time
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple, cast

# (kind "script" or "module", the script or module, its arguments)
Command = Tuple[str, str, List[str]]

# Spelt out, not imported from ._contract: this file's top also runs as
# __main__, outside the package, where a relative import fails
# (tests/python/test_contract.py checks both against the C headers).
REFUSED_EXIT = 78  # PM_WARM_REFUSED_EXIT in runtime/common/warm.h
_ENV_WARM_FD = "PROCMGR_WARM_FD"  # PM_ENV_WARM_FD


def _usage(msg: str) -> NoReturn:
    sys.stderr.write("procmgr: --procmgr-warm=python: %s; every generation starts cold\n"
                     % msg)
    sys.stderr.flush()
    # procmgr-rank starts the generation cold, says so, and does not try
    # again (it would fail the same way).
    sys.exit(REFUSED_EXIT)


def _parse(argv: Sequence[str]) -> Tuple[List[str], Command, bool]:
    """(modules, (kind, target, args), unbuffered) from this module's argv."""
    if len(argv) < 2 or argv[1] != "--":
        _usage("procmgr-rank's server needs MODS -- COMMAND")
    mods = [m for m in argv[0].split(",") if m]
    rest, unbuffered = list(argv[2:]), False
    while rest and rest[0].startswith("-") and rest[0] != "-":
        opt = rest.pop(0)
        if opt == "-u":
            unbuffered = True
        elif opt in ("-B", "-E", "-s", "-I", "-P"):
            pass  # procmgr-rank gave them to this interpreter too
        elif opt == "-m":
            if not rest:
                _usage("-m needs a module")
            return mods, ("module", rest[0], rest[1:]), unbuffered
        else:
            _usage("the interpreter option %s is not supported (allowed before the script: "
                   "-u, -B, -E, -s, -I, -P, -m MODULE)" % opt)
    if not rest:
        _usage("no script to run (the command is python with no script)")
    return mods, ("script", rest[0], rest[1:]), unbuffered


def _importer(path: str) -> bool:
    """Whether an import hook takes path (a directory or a zip file with
    a __main__), as the interpreter asks of its script argument."""
    for hook in sys.path_hooks:
        try:
            hook(path)
            return True
        except ImportError:
            continue
    return False


def path0(kind: str, target: str, flags: Any = sys.flags) -> Optional[str]:
    """What `python script.py` (kind "script") or `python -m module`
    ("module") puts first on sys.path: the script's directory, symlinks
    resolved (a directory or zip file run as a script: itself), or the
    working directory; None under -I, -P or PYTHONSAFEPATH but for a
    directory or zip file (flags: the interpreter's, which got the
    command's options)."""
    if kind == "script" and _importer(target):
        return os.path.join(os.getcwd(), target)
    if flags.isolated or getattr(flags, "safe_path", False):
        return None
    if kind == "module":
        return os.getcwd()
    return os.path.dirname(os.path.realpath(target))


def fork_refusal(mods: Sequence[str]) -> Optional[str]:
    """Why this process must not fork the generation (None: it may)."""
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        threads = 1
    if threads > 1:
        return ("%d threads run in the fork server after importing %s (a fork keeps only "
                "one: their locks would stay held in the script); preload modules that "
                "start no thread at import" % (threads, ",".join(mods)))
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        return ("CUDA is initialised in the fork server after importing %s (a CUDA context "
                "does not survive a fork); preload modules that do not touch the GPU"
                % ",".join(mods))
    return None


def _check(mods: Sequence[str]) -> None:
    why = fork_refusal(mods)
    if why:
        _usage("refused: " + why)


class _Channel:
    """procmgr-rank's lines, read one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, b""

    def line(self) -> Optional[str]:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None  # procmgr-rank is gone: so are we
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "surrogateescape")

    def generation(self) -> Optional[Dict[str, str]]:
        """The next generation's environment (a dict) once "start" came;
        None when the channel closed."""
        env: Dict[str, str] = {}
        while True:
            text = self.line()
            if text is None:
                return None
            if text.startswith("env ") and "=" in text:
                name, value = text[4:].split("=", 1)
                env[name] = value
            elif text.startswith("start ") and text[6:].isdigit():
                return env
            else:
                sys.stderr.write("procmgr: fork server: unexpected line %r\n" % text[:64])
                os._exit(2)


def _prctl() -> Optional[Callable[..., int]]:
    """libc's prctl, loaded in the server (not in each fork); None if not."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _become_rank(env: Dict[str, str], supervisor: int, middle: int, fds: Sequence[int],
                 prctl: Optional[Callable[..., int]]) -> None:
    """In the generation's process, once forked: the rest of what a cold
    start has. Returns to run the script."""
    for fd in fds:
        os.close(fd)
    # Its own process group, as procmgr-rank gives a cold start (the
    # middle process sets it too: no race with procmgr-rank's first kill).
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    # Reparented to procmgr-rank once the middle process is gone (a sleep,
    # not a spin: 8 ranks' forks share a node's cores with their middles).
    while os.getppid() == middle:
        time.sleep(0.0002)
    if prctl is not None:
        prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL: die with procmgr-rank
    if os.getppid() != supervisor:
        os._exit(137)  # procmgr-rank ended meanwhile
    os.environ.update(env)
    # The other ranks' store connection waits for rank 0's port
    # (rendezvous.py): no knock refused, no second lost to torch's retry.
    from . import rendezvous
    rendezvous.open_store()
    np = sys.modules.get("numpy")
    if np is not None and hasattr(np, "random"):
        np.random.seed()  # fresh, as at a cold import; Python's random reseeds itself


def serve(mods: Sequence[str], sock: socket.socket) -> None:
    """The fork server's loop: returns in each generation's process, never
    in the server (which exits when procmgr-rank closes the channel)."""
    supervisor = os.getppid()
    ch = _Channel(sock)
    prctl = _prctl()
    # What the modules built stays out of the collector's sight: a
    # collection in the fork would write to every object's header, a copy
    # of each page (and seconds, 8 ranks on a node's cores at once).
    gc.collect()
    gc.freeze()
    sock.sendall(b"ready\n")
    while True:
        env = ch.generation()
        if env is None:
            os._exit(0)
        _check(mods)
        sys.stdout.flush()
        sys.stderr.flush()
        rfd, wfd = os.pipe()
        middle = os.fork()
        if middle == 0:
            me = os.getpid()
            try:
                pid = os.fork()
            except OSError:
                os._exit(1)
            if pid == 0:
                _become_rank(env, supervisor, me, (rfd, wfd, sock.fileno()), prctl)
                return
            try:
                os.setpgid(pid, pid)
            except OSError:
                pass
            os.write(wfd, b"%d" % pid)
            os._exit(0)
        os.close(wfd)
        data = b""
        while True:
            chunk = os.read(rfd, 32)
            if not chunk:
                break
            data += chunk
        os.close(rfd)
        os.waitpid(middle, 0)
        if not data.isdigit():
            sys.stderr.write("procmgr: fork server: the fork failed\n")
            os._exit(3)  # procmgr-rank starts this generation cold, says so
        sock.sendall(b"pid %s\n" % data)


def main(argv: Optional[Sequence[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    mods, (kind, target, args), unbuffered = _parse(argv)
    fd = os.environ.pop(_ENV_WARM_FD, None)
    if kind == "script" and not os.path.exists(target):
        _usage("can't open file %r" % target)
    # Before the modules: they are the script's, found where it finds them.
    first = path0(kind, target)
    if first is not None:
        sys.path.insert(0, first)
    for m in mods:
        __import__(m)
    if fd is not None:
        _check(mods)
        serve(mods, socket.socket(fileno=int(fd)))
    # Here: the generation's process (or run by hand, no procmgr: just run).
    if unbuffered:
        cast(io.TextIOWrapper, sys.stdout).reconfigure(write_through=True)
        cast(io.TextIOWrapper, sys.stderr).reconfigure(write_through=True)
    sys.argv = [target] + list(args)
    if kind == "module":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    # Run as a file: python put this file's directory, procmgr's package,
    # first on sys.path (nothing was imported from there: the imports
    # above are of modules the interpreter's start loaded, or not there).
    # Its modules are not top-level ones: procmgr is imported from the
    # directory above, as a package (relative imports), and then that
    # goes too. What stays is a cold start's sys.path, before main() puts
    # the script's directory first.
    _here = os.path.dirname(os.path.realpath(__file__))
    if sys.path[:1] == [_here]:
        del sys.path[0]
    _top = os.path.dirname(_here)
    sys.path.insert(0, _top)
    from procmgr.standby import main as _main
    sys.path.remove(_top)
    _main()

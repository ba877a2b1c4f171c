"""procmgr: what a program run under procmgr can tell it, and ask.

Pure Python, standard library only. Every function is a no-op (or returns
what a plain, unsupervised run would) outside procmgr, so that the same
script runs under procmgr, under torchrun, or by hand.

    import procmgr
    procmgr.ready()                  # warm: wait here for the generation
    ...
    for step in range(start, steps):
        procmgr.heartbeat(step)      # liveness, and where training is
        ...
        procmgr.save_torch("model", model.state_dict(), step)  # kept by procmgr

    # after a restart: the last version this rank saved, or None
    state = procmgr.load_torch("model")

The heartbeat file is procmgr's hang detector's input (srun
--procmgr-hang-timeout); a rank's first heartbeat of a generation is (with
or without a hang timeout)
the end of a restart as procmgr measures it: "every rank training again N s
after the failure" on srun's stderr, in the event log, in `procmgr status`
and in the metrics.
"""
# No __future__ import: tests/python/test_forkserver.py's control shows a
# planted socket.py is what a `python -c` start would import first.
import os
import socket
import time
from typing import Dict, Optional, Union

from ._contract import (ENV_HEARTBEAT, ENV_MASTER_ADDR, ENV_MASTER_PORT, ENV_RESTART_COUNT,
                        ENV_RESULT_FILE, ENV_TE_RESTART_COUNT, ENV_WARM_FD, ENV_LOCAL_RANK,
                        ENV_RANK, ENV_WORLD_SIZE, RESULT_NAME_MAX, RESULT_VALUE_MAX)
from .rendezvous import open_store
from .state import Saving, StateError, save, load, load_info, saved, save_torch, load_torch

__all__ = ["heartbeat", "ready", "report", "restart_count", "under_procmgr", "rank", "local_rank",
           "world_size", "wait_store", "open_store", "Saving", "save", "load", "load_info", "saved", "save_torch",
           "load_torch", "StateError"]

def under_procmgr() -> bool:
    """True when this process is a rank's command started by procmgr."""
    return ENV_RESTART_COUNT in os.environ


def heartbeat(step: Optional[int] = None, compute: Optional[float] = None) -> bool:
    """Tell procmgr this rank is alive (and, with step, how far it got).

    Touches the file named by PROCMGR_HEARTBEAT, which procmgr sets for
    every rank: the hang detector's input (--procmgr-hang-timeout), the
    slow-node detector's (--procmgr-slow), and, a generation's first, when
    training resumed after a restart (the recovery procmgr reports). With
    step (an int, e.g. the training step), the file's content becomes that
    number, written whole (a temporary file renamed over it): a reader never
    sees half a number. With compute too (seconds, a float), the time the
    last step spent computing, outside collectives (not waiting for the
    other ranks): "STEP COMPUTE_MS". That is the slow-node detector's best
    evidence: in a synchronous job every rank's step takes as long as the
    slowest's, but only the slow one computes longer. Without it, procmgr
    judges by which node arrives last at each step (weaker). Returns True if
    a heartbeat was given, False outside procmgr.
    Cheap enough for every step (one open/close, or a write and a rename).
    """
    path = os.environ.get(ENV_HEARTBEAT)
    if not path:
        return False
    if step is None:
        # Opening for writing and closing is what procmgr-rank watches.
        with open(path, "a"):
            pass
        return True
    if compute is None:
        text = "%d\n" % int(step)
    else:
        text = "%d %.3f\n" % (int(step), max(0.0, float(compute)) * 1000.0)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    # A rename is not one of the changes the supervisor watches for; a
    # change of the file's times is.
    os.utime(path)
    return True


def ready() -> bool:
    """Say that the program's start-up is done and wait for its generation.

    With --procmgr-warm=on, procmgr starts each rank's next generation
    ahead of time, as a standby: it runs the program up to here (the
    imports, reading the configuration, building the model on the CPU),
    then blocks in ready() until its generation starts. os.environ is then
    updated with what a cold start of that generation would have had
    (PROCMGR_RESTART_COUNT, TORCHELASTIC_RESTART_COUNT, the error file;
    RANK, GROUP_RANK, MASTER_ADDR after a node's replacement) and it
    returns. Call it after the expensive imports and before reading that
    environment. In a generation started cold, it says "ready" (which is
    how procmgr learns the program speaks the contract: standbys start only
    after that) and returns at once.

    Under procmgr, warm or not, if the program imported torch.distributed,
    the other ranks' init_process_group waits from here until rank 0's
    store listens (open_store(); PROCMGR_OPEN_STORE=0: not).

    Returns False outside procmgr (a no-op) or without --procmgr-warm;
    True once the generation started. Only the first call does anything.
    """
    fd = os.environ.pop(ENV_WARM_FD, None)
    if fd is None:
        if under_procmgr():
            open_store()  # a cold generation: start-up done, ranks 1.. wait for rank 0
        return False
    try:
        sock = socket.socket(fileno=int(fd))
    except (ValueError, OSError):
        return False
    with sock:
        sock.sendall(b"ready\n")
        env = _read_start(sock)
    os.environ.update(env)
    # The other ranks' store connection waits for rank 0's port (a
    # program that imported torch.distributed).
    open_store()
    return True


def _read_start(sock: socket.socket) -> Dict[str, str]:
    """The supervisor's "env NAME=VALUE" lines up to "start GEN": the
    environment, as a dict. Raises RuntimeError on a closed channel or a
    line that is not one of those (procmgr then starts the generation cold
    anyway: this process is no use to it)."""
    env, buf = {}, b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("procmgr: the warm channel closed before the generation "
                               "started")
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            text = line.decode("utf-8", "surrogateescape")
            if text.startswith("env ") and "=" in text:
                name, value = text[4:].split("=", 1)
                env[name] = value
            elif text.startswith("start ") and text[6:].isdigit():
                return env
            else:
                raise RuntimeError("procmgr: unexpected line on the warm channel: %r"
                                   % text[:64])


def report(**result: Union[int, float]) -> None:
    """A sweep's trial reports its result: report(loss=0.25). One NAME=VALUE,
    a number (int or float, finite), written as a line to the file
    $PROCMGR_RESULT_FILE, which procmgr reads when the trial ends: the
    results file's metric and value columns and `procmgr status` show it
    (`--sort result`). Call it as often as you like (each epoch): the last
    call counts (each call replaces the file). Rank 0's result is the trial's. Any program can do the
    same: echo "loss=0.25" >>"$PROCMGR_RESULT_FILE". Outside a sweep it does
    nothing. Raises ValueError for what procmgr would refuse."""
    if len(result) != 1:
        raise ValueError("procmgr.report: one NAME=VALUE, e.g. report(loss=0.25), not %d"
                         % len(result))
    (name, value), = result.items()
    if not 1 <= len(name) <= RESULT_NAME_MAX or not all(
            c.isascii() and (c.isalnum() or c in "_.-") for c in name):
        raise ValueError("procmgr.report: the name %r has 1 to %d letters, digits, '_', '.'"
                         " and '-'" % (name, RESULT_NAME_MAX))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("procmgr.report: the value of %s is a number, not %r" % (name, value))
    text = repr(float(value)) if isinstance(value, float) else str(value)
    if text in ("nan", "inf", "-inf") or len(text) > RESULT_VALUE_MAX:
        raise ValueError("procmgr.report: the value of %s, %s, is not a finite number of at "
                         "most %d characters" % (name, text, RESULT_VALUE_MAX))
    path = os.environ.get(ENV_RESULT_FILE)
    if not path:
        return
    # Whole each time: only the last line counts, and the file stays small.
    with open(path, "w") as f:
        f.write("%s=%s\n" % (name, text))


def restart_count() -> int:
    """This generation's number: 0 at the first start, +1 at each restart
    (PROCMGR_RESTART_COUNT; torchrun's TORCHELASTIC_RESTART_COUNT otherwise;
    0 when neither is set)."""
    for name in (ENV_RESTART_COUNT, ENV_TE_RESTART_COUNT):
        v = os.environ.get(name)
        if v is not None:
            return int(v)
    return 0


def _env_int(name: str, default: int) -> int:
    v = os.environ.get(name)
    return int(v) if v else default


def rank() -> int:
    """The global rank (RANK, else SLURM_PROCID, else 0)."""
    return _env_int(ENV_RANK, _env_int("SLURM_PROCID", 0))


def local_rank() -> int:
    """The rank on this node (LOCAL_RANK, else SLURM_LOCALID, else 0)."""
    return _env_int(ENV_LOCAL_RANK, _env_int("SLURM_LOCALID", 0))


def world_size() -> int:
    """The number of ranks (WORLD_SIZE, else SLURM_NTASKS, else 1)."""
    return _env_int(ENV_WORLD_SIZE, _env_int("SLURM_NTASKS", 1))


def wait_store(timeout: float = 60.0, interval: float = 0.01) -> bool:
    """On a rank other than 0: wait until rank 0's store (MASTER_ADDR:
    MASTER_PORT) accepts a connection, for at most timeout seconds.

    After a restart every rank starts at once and the fastest reach
    init_process_group before rank 0's store listens; torch (1.13) then
    retries a refused connection only once a second, so the rendezvous
    ends up to a second after the last rank came. Polling every 10 ms
    here first takes that second away. Returns True once the port
    answered (at once on rank 0, or without MASTER_ADDR/MASTER_PORT),
    False at the timeout (init_process_group then waits as it would have).
    """
    host, port = os.environ.get(ENV_MASTER_ADDR), os.environ.get(ENV_MASTER_PORT)
    if rank() == 0 or not host or not port:
        return True
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=1.0):
                return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)

"""The rendezvous does not wait on a closed door.

After a restart every rank starts at once. torch.distributed's env:// (and
tcp://) rendezvous makes rank 0 host the store at MASTER_ADDR:MASTER_PORT
and the other ranks connect to it; a rank that knocks before rank 0's store
listens is refused, and torch (1.13) knocks again only a second later. On a
warm restart, where the whole recovery is about a second, that second is
most of it.

open_store() closes the gap from both sides, with no change to the
program's init_process_group call:
  - on rank 0 it opens the store at once (at the generation's release, by
    procmgr.ready() or the python fork server), long before the program
    reaches init_process_group. torch opens its stores "multi-tenant": its
    own TCPStore on the same port then shares the server opened here,
    whose keys and counters it finds untouched (this one does not wait for
    the workers and writes nothing).
  - on the other ranks it makes torch's store creation first wait until
    rank 0's port accepts, polling every 10 ms, so the first knock is
    answered.

It needs torch.distributed imported already (it never imports torch: a
program that does not use it pays nothing), WORLD_SIZE > 1, and rank 0
hosting the store (not torchrun's agent store). It reaches into
torch.distributed.rendezvous's _create_c10d_store, which torch 1.13 to 2.6
have; where that is missing, only rank 0's side applies.
"""
import datetime
import os
import socket
import sys
import time

_state = {"store": None, "wrapped": False}


def _env_int(env, name):
    try:
        return int(env.get(name, ""))
    except ValueError:
        return None


def _port_open(host, port, timeout):
    """Poll host:port every 10 ms until it accepts, for at most timeout
    seconds. True once it did."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)


def _wrap(rdzv):
    """Make rdzv._create_c10d_store wait for rank 0's port on other ranks."""
    original = getattr(rdzv, "_create_c10d_store", None)
    if original is None or getattr(original, "_procmgr_wrapped", False):
        return original is not None

    def create(hostname, port, rank, world_size, timeout, *args, **kwargs):
        if rank != 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
            seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else 300
            _port_open(hostname, int(port), max(1.0, seconds))
        return original(hostname, port, rank, world_size, timeout, *args, **kwargs)

    create._procmgr_wrapped = True
    rdzv._create_c10d_store = create
    return True


def open_store(environ=None):
    """Open rank 0's store now, or make this rank's connection to it wait
    until it listens. Returns "opened" (rank 0), "waits" (another rank),
    or None when nothing applies (PROCMGR_OPEN_STORE=0, no torch.distributed
    imported, one rank, no MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE,
    torchrun's agent store, or the port could not be taken). Only the first call that applies does
    anything; safe to call more than once."""
    env = os.environ if environ is None else environ
    if env.get("PROCMGR_OPEN_STORE") == "0":
        return None
    dist = sys.modules.get("torch.distributed")
    if dist is None or not getattr(dist, "is_available", lambda: False)():
        return None
    host, port = env.get("MASTER_ADDR"), _env_int(env, "MASTER_PORT")
    rank, world = _env_int(env, "RANK"), _env_int(env, "WORLD_SIZE")
    if not host or port is None or rank is None or world is None or world < 2:
        return None
    if env.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        return None
    if rank != 0:
        rdzv = sys.modules.get("torch.distributed.rendezvous")
        if rdzv is None:
            return None
        _state["wrapped"] = _wrap(rdzv)
        return "waits" if _state["wrapped"] else None
    if _state["store"] is not None:
        return "opened"
    args = (host, port, world, True, datetime.timedelta(seconds=1800))
    kwargs = {"wait_for_workers": False, "multi_tenant": True}
    try:
        # Kept for the process's life: torch's own store on this port
        # shares its server (multi_tenant) only while one holds it.
        try:
            # torch >= 2.4 takes a libuv server unless told (USE_LIBUV=0, as
            # its own stores are): the shared server must be the kind they ask.
            _state["store"] = dist.TCPStore(
                *args, use_libuv=env.get("USE_LIBUV", "1") == "1", **kwargs)
        except TypeError:
            _state["store"] = dist.TCPStore(*args, **kwargs)  # torch < 2.4
    except (RuntimeError, OSError, TypeError, ValueError) as e:
        sys.stderr.write("procmgr: rank 0's store not opened ahead at %s:%d (%s); "
                         "init_process_group opens it\n" % (host, port, e))
        return None
    return "opened"

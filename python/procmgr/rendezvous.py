"""The rendezvous does not wait on a closed door.

After a restart every rank starts at once. torch.distributed's env:// (and
tcp://) rendezvous makes rank 0 host the store at MASTER_ADDR:MASTER_PORT
and the other ranks connect to it; a rank that knocks before rank 0's store
listens is refused, and torch (1.13) knocks again only a second later. On a
warm restart, where the whole recovery is about a second, that second is
most of it.

open_store() closes the gap from the other ranks' side, with no change to
the program's init_process_group call: it makes torch's store creation on
a rank other than 0 first wait until rank 0's port accepts, polling every
10 ms, so the first knock is answered.

It opens nothing (issue 32). torch's store server takes no credential
and listens on every address of rank 0's node whatever MASTER_ADDR says
(torch 1.13 has no way to bind it, nor to hand it a socket): a store
procmgr opened ahead would be one that any user who can reach the port,
on the node or from another, can read and set keys in. torch's own store,
opened by init_process_group, is the program's and is all that listens;
docs/user-guide.md says what that leaves open.

It needs torch.distributed imported already (it never imports torch: a
program that does not use it pays nothing), WORLD_SIZE > 1, and rank 0
hosting the store (not torchrun's agent store). It reaches into
torch.distributed.rendezvous's _create_c10d_store, which torch 1.13 to 2.6
have; where that is missing, it does nothing.
"""
from __future__ import annotations

import os
import socket
import sys
import time
from types import ModuleType
from typing import Any, Callable, Dict, Mapping, Optional

from ._contract import (ENV_MASTER_ADDR, ENV_MASTER_PORT, ENV_OPEN_STORE, ENV_RANK,
                        ENV_TE_USE_AGENT_STORE, ENV_WORLD_SIZE)

_state: Dict[str, bool] = {"wrapped": False}


def _env_int(env: Mapping[str, str], name: str) -> Optional[int]:
    try:
        return int(env.get(name, ""))
    except ValueError:
        return None


def _port_open(host: str, port: int, timeout: float) -> bool:
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


def _wrap(rdzv: ModuleType) -> bool:
    """Make rdzv._create_c10d_store wait for rank 0's port on other ranks."""
    found = getattr(rdzv, "_create_c10d_store", None)
    if found is None or getattr(found, "_procmgr_wrapped", False):
        return found is not None
    original: Callable[..., Any] = found

    def create(hostname: str, port: int, rank: int, world_size: int, timeout: Any,
               *args: Any, **kwargs: Any) -> Any:
        if rank != 0 and os.environ.get(ENV_TE_USE_AGENT_STORE) != "True":
            seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else 300
            _port_open(hostname, int(port), max(1.0, seconds))
        return original(hostname, port, rank, world_size, timeout, *args, **kwargs)

    setattr(create, "_procmgr_wrapped", True)
    setattr(rdzv, "_create_c10d_store", create)
    return True


def open_store(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Make this rank's connection to rank 0's store wait until it
    listens. Returns "waits" (a rank other than 0), or None when nothing
    applies (rank 0, which opens nothing: its store is torch's own, opened
    by init_process_group; PROCMGR_OPEN_STORE=0; no torch.distributed
    imported; one rank; no MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE;
    torchrun's agent store). Only the first call that applies does
    anything; safe to call more than once."""
    env = os.environ if environ is None else environ
    if env.get(ENV_OPEN_STORE) == "0":
        return None
    dist = sys.modules.get("torch.distributed")
    if dist is None or not getattr(dist, "is_available", lambda: False)():
        return None
    host, port = env.get(ENV_MASTER_ADDR), _env_int(env, ENV_MASTER_PORT)
    rank, world = _env_int(env, ENV_RANK), _env_int(env, ENV_WORLD_SIZE)
    if not host or port is None or rank is None or world is None or world < 2:
        return None
    if env.get(ENV_TE_USE_AGENT_STORE) == "True":
        return None
    if rank == 0:
        return None
    rdzv = sys.modules.get("torch.distributed.rendezvous")
    if rdzv is None:
        return None
    _state["wrapped"] = _wrap(rdzv)
    return "waits" if _state["wrapped"] else None

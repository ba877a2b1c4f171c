"""A program using procmgr's public API as a training script would, for
mypy --strict (tests/unit/python-types.sh): the annotations a user's
checker sees. Never run by the unit tests (it names no test)."""
from __future__ import annotations

from typing import Dict, Optional, Union

import procmgr


def train(buf: bytearray) -> int:
    procmgr.ready()
    start: int = procmgr.restart_count()
    version: Optional[int] = procmgr.save("model", buf, step=start)
    pending: procmgr.Saving = procmgr.save("model", buf, step=start, wait=False)
    pending.copied(timeout=1.0)
    later: Optional[int] = pending.wait()
    view: Optional[memoryview] = procmgr.load("model")
    info: Optional[Dict[str, int]] = procmgr.load_info("model")[1]
    listing: Dict[str, Dict[str, Union[int, bool]]] = procmgr.saved()
    alive: bool = procmgr.heartbeat(start, compute=0.5)
    procmgr.report(loss=0.25)
    where: Optional[str] = procmgr.open_store()
    waited: bool = procmgr.wait_store(timeout=5.0)
    ranks = (procmgr.rank(), procmgr.local_rank(), procmgr.world_size())
    try:
        procmgr.save_torch("opt", {"lr": 0.1}, step=start)
    except procmgr.StateError as e:
        print(e)
    print(version, later, view, info, listing, alive, where, waited, ranks,
          procmgr.under_procmgr(), procmgr.load_torch("opt"))
    return start

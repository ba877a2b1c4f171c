"""The ranks' state kept in memory by procmgr (see procmgr.save).

The protocol (docs/user-guide.md, "State in memory"): a SOCK_SEQPACKET
Unix socket named by PROCMGR_STATE_SOCK; one request per message, a line
of ASCII, at most one descriptor attached (SCM_RIGHTS); one reply each.
"""
from __future__ import annotations

import io
import mmap
import os
import socket
import threading
from typing import (Any, Callable, Dict, List, Literal, Mapping, NamedTuple, Optional, Set,
                    Tuple, Union, overload)

from . import _memfile
from ._contract import (ENV_STATE_PREPARE, ENV_STATE_SOCK, ENV_STATE_SWAP, STATE_ABORT,
                        STATE_BEGIN, STATE_COMMIT, STATE_LIST, STATE_LOAD, STATE_REPLY_MAX,
                        STATE_SWAP)
from ._memfile import Ident, Prepared, Spare

# What save takes: anything with the buffer protocol (bytes, bytearray,
# memoryview, a numpy array, a CPU tensor's numpy()): typing has no name for
# that before Python 3.12 (PEP 688).
Buffer = Any

__all__ = ["StateError", "Saving", "WritePath", "available", "save", "load", "load_info",
           "saved", "save_torch", "load_torch"]


class StateError(OSError):
    """procmgr refused a save or a load; the message says why (a limit,
    a name). The program may go on: its last saved version is unchanged."""


class WritePath(NamedTuple):
    """How a save writes its bytes, of the three ways (bench/README.md,
    "State in memory"):
      swap: into a file procmgrd handed back (PROCMGR_STATE_SWAP, default
        on; from a name's third save of the same size on). Else, or until
        one comes back, a file committed to procmgrd and sealed, which is
      prepare "alloc": allocated ahead by a background thread, written
        with pwrite (the default), or
      prepare "map": also mapped and touched ahead, written by a memcpy
        (PROCMGR_STATE_PREPARE=map), or
      prepare "none": a fresh file (PROCMGR_STATE_PREPARE=0 or
        save(prepare=False))."""
    swap: bool
    prepare: str  # "none", "alloc" or "map"

    @classmethod
    def choose(cls, environ: Mapping[str, str], prepare: Optional[bool] = None) -> WritePath:
        """The way from the environment, at each save (bench/state switches
        ways between runs in one process); prepare: save's argument, which
        wins over PROCMGR_STATE_PREPARE's on or off."""
        mode = environ.get(ENV_STATE_PREPARE, "1")
        if prepare is None:
            prepare = mode != "0"
        return cls(swap=environ.get(ENV_STATE_SWAP, "1") != "0",
                   prepare="none" if not prepare else "map" if mode == "map" else "alloc")


def available() -> bool:
    """True when this rank can keep state in procmgr (PROCMGR_STATE_SOCK)."""
    return bool(os.environ.get(ENV_STATE_SOCK))


class _Client:
    """This process's side of the state socket: its connection and the
    memory files it holds between saves. One per process (_client); a
    fork's child starts with none of its parent's (forget_parents)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.conn: Optional[socket.socket] = None
        self.conn_pid: Optional[int] = None
        # The next version's file of each name, prepared in the background
        # (name -> Prepared), while no spare of it came back.
        self.prepared: Dict[str, Prepared] = {}
        # Swap: a version is handed to procmgrd writable, its size fixed,
        # and procmgrd hands back the version it replaced once nothing of
        # procmgrd reads it (the copy to the buddy) and no load mapped it.
        # This process keeps each such file mapped, so from the third save
        # of a name on, a save is one copy into pages that are there and
        # mapped: no allocation, no page faults, no seal. Two files per
        # name take turns; the one procmgrd keeps is never written by this
        # module until it comes back.
        self.spares: Dict[str, Spare] = {}  # name -> the file the next save writes into
        # name -> {file: mapping}: files swapped in, mapped, kept for their return
        self.maps: Dict[str, Dict[Ident, mmap.mmap]] = {}
        self.loaded: Set[Ident] = set()  # files this process loaded: never written (mapped)
        # A fork's child inherits the parent's objects but not the mappings
        # behind them (MADV_DONTFORK): were one of them freed in the child,
        # its munmap would hit whatever the child mapped at that address
        # since. The child keeps them here, never used and never freed.
        self.inherited: List[Tuple[Dict[str, Spare], Dict[str, Dict[Ident, mmap.mmap]],
                                   Dict[str, Prepared]]] = []

    def forget_parents(self) -> None:
        self.inherited.append((self.spares.copy(), self.maps.copy(), self.prepared.copy()))
        self.spares.clear()
        self.maps.clear()
        self.prepared.clear()

    # ---- the connection ----

    def sock(self) -> socket.socket:
        # One connection per process (a fork makes its own): procmgr knows
        # the rank by the process that connected.
        if self.conn is None or self.conn_pid != os.getpid():
            if self.conn is not None:
                # A fork's copy of the parent's connection: closing it here
                # leaves the parent's open.
                self.drop()
            path = os.environ.get(ENV_STATE_SOCK)
            if not path:
                raise StateError("procmgr: no state socket (%s is not set)" % ENV_STATE_SOCK)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(path)
            self.conn, self.conn_pid = s, os.getpid()
        return self.conn

    def drop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
        self.conn = None

    def send(self, line: str, fd: Optional[int] = None) -> None:
        s = self.sock()
        data = line.encode("ascii")
        if fd is None:
            s.send(data)
        else:
            socket.send_fds(s, [data], [fd])

    def ask(self, line: str, fd: Optional[int] = None) -> Tuple[str, Optional[int]]:
        self.send(line, fd)
        return self.reply()

    def reply(self) -> Tuple[str, Optional[int]]:
        """The answer to the request sent last: (text, descriptor or None);
        StateError for a refusal."""
        s = self.sock()
        msg, fds, _flags, _addr = socket.recv_fds(s, STATE_REPLY_MAX, 1)
        if not msg:
            self.drop()
            raise StateError("procmgr closed the state socket")
        text = msg.decode("ascii", "replace")
        if text.startswith("err "):
            for f in fds:
                os.close(f)
            # Refused at connect (not a rank of this step): the connection is over.
            if not fds and text.startswith("err refused:"):
                self.drop()
            raise StateError(text[4:])
        return text, (fds[0] if fds else None)

    # ---- the files ----

    def take_prepared(self, name: str, size: int) -> Tuple[int, Optional[mmap.mmap]]:
        """(fd, mapping or None): a memory file of size bytes for name's next
        version: the prepared one when there is one of that size (a fork's
        child has none of its parent's), else a fresh one (no mapping)."""
        p = self.prepared.pop(name, None)
        fd, m = -1, None
        if p is not None:
            fd, m = p.take()
            if fd >= 0 and p.size != size:
                if m is not None:
                    m.close()
                m = None
        if fd < 0:
            fd = _memfile.new(name)
        try:
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, size)
        except BaseException:
            if m is not None:
                m.close()
            os.close(fd)
            raise
        return fd, m

    def take_spare(self, name: str, size: int) -> Optional[Spare]:
        """The spare file of name, if it is of size bytes; else None (and a
        stale one dropped)."""
        sp = self.spares.pop(name, None)
        if sp is None:
            return None
        if sp.size != size:
            sp.close()
            self.maps.pop(name, None)  # every kept mapping is of the old size
            return None
        return sp

    def swapped(self, name: str, fd: int, m: Optional[mmap.mmap], size: int,
                back: Optional[int]) -> None:
        """After a swap of fd (mapped by m, or None): m is kept for fd's
        return, back (the version replaced, handed back, or None) becomes
        the next spare, and the mappings of files procmgrd keeps no more go."""
        kept = self.maps.pop(name, {})
        spare = None
        if back is not None:
            try:
                bident, bsize = _memfile.ident(back)
                bm = kept.pop(bident, None)
                if bident in self.loaded or bsize != size:
                    if bm is not None:
                        bm.close()
                    os.close(back)
                else:
                    spare = Spare(back, bm if bm is not None else _memfile.writable_map(back, size),
                                  size)
            except (OSError, ValueError):
                os.close(back)
        for old in kept.values():
            if old is not m:
                old.close()
        if m is not None:
            self.maps[name] = {_memfile.ident(fd)[0]: m}
        if spare is not None:
            self.spares[name] = spare

    # ---- the requests ----

    def save(self, name: str, view: memoryview, step: int, path: WritePath,
             copied: Optional[Callable[[], None]]) -> int:
        size = view.nbytes
        swap = path.swap and size > 0
        with self.lock:
            sp = self.take_spare(name, size) if swap else None
            if sp is None:
                # The limits are judged before a fresh file takes memory.
                text, _ = self.ask("%s %s %d" % (STATE_BEGIN, name, size))
            else:
                # The spare's memory is there already: procmgrd judges the
                # limits while the bytes are copied (a refusal leaves the
                # last version, and the spare is dropped).
                self.send("%s %s %d" % (STATE_BEGIN, name, size))
            fd, m, back, ticket = -1, None, None, None
            pending = sp is not None  # begin's answer not read yet
            try:
                if sp is not None:
                    fd, m = sp.fd, sp.map
                    _memfile.copy_into(m, view)
                    pending = False
                    text, _ = self.reply()
                    ticket = int(text.split()[1])
                else:
                    ticket = int(text.split()[1])
                    fd, m = self.take_prepared(name, size)
                    if m is not None:
                        _memfile.copy_into(m, view)
                    else:
                        _memfile.write_all(fd, view)
                if copied is not None:
                    copied()
                if not swap and m is not None:
                    # procmgrd seals the file: no writable mapping may remain.
                    m.close()
                    m = None
                text, back = self.ask("%s %d %d" % (STATE_SWAP if swap else STATE_COMMIT,
                                                    ticket, int(step)), fd)
            except BaseException:
                if m is not None:
                    m.close()
                if pending:
                    # Cut off in the copy: begin's answer is read (the next
                    # request must get its own) and its save aborted.
                    try:
                        ticket = int(self.reply()[0].split()[1])
                    except (OSError, StateError, ValueError, IndexError):
                        pass
                if ticket is not None:
                    try:
                        self.ask("%s %d" % (STATE_ABORT, ticket))
                    except (OSError, StateError):
                        pass
                if fd >= 0:
                    os.close(fd)
                raise
            if swap:
                self.swapped(name, fd, m, size, back)
            elif back is not None:
                os.close(back)
            os.close(fd)
            if path.prepare != "none" and name not in self.spares:
                self.prepared[name] = Prepared(name, size, path.prepare == "map")
            return int(text.split()[1])

    def commit_file(self, name: str, fd: int, step: int) -> int:
        """fd's whole content (a file this process wrote) as name's next
        version, sealed by procmgrd."""
        size = os.fstat(fd).st_size
        with self.lock:
            text, _ = self.ask("%s %s %d" % (STATE_BEGIN, name, size))
            ticket = int(text.split()[1])
            try:
                text, _ = self.ask("%s %d %d" % (STATE_COMMIT, ticket, int(step)), fd)
            except StateError:
                raise
            except BaseException:
                try:
                    self.ask("%s %d" % (STATE_ABORT, ticket))
                except (OSError, StateError):
                    pass
                raise
        return int(text.split()[1])

    def load(self, name: str) -> Tuple[Optional[str], Optional[int]]:
        with self.lock:
            text, fd = self.ask("%s %s" % (STATE_LOAD, name))
        if text == "none":
            return None, None
        return text, fd

    def list(self) -> str:
        with self.lock:
            return self.ask(STATE_LIST)[0]


_client = _Client()
os.register_at_fork(after_in_child=_client.forget_parents)


class Saving:
    """A save running in the background (save(..., wait=False)). The
    buffer must not change until copied() (or wait()) returns: the copy
    reads it."""

    def __init__(self, run: Callable[[Callable[[], None]], Optional[int]]) -> None:
        self._version: Optional[int] = None
        self._error: Optional[BaseException] = None
        self._copied = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(run,),
                                        name="procmgr-save", daemon=True)
        self._thread.start()

    def _run(self, run: Callable[[Callable[[], None]], Optional[int]]) -> None:
        try:
            self._version = run(self._copied.set)
        except BaseException as e:  # handed to wait()'s caller
            self._error = e
        finally:
            self._copied.set()

    def done(self) -> bool:
        """True once the save has ended (kept or refused)."""
        return not self._thread.is_alive()

    def copied(self, timeout: Optional[float] = None) -> None:
        """Blocks until the buffer's bytes are in the memory file (or the
        save ended): from then the buffer may change. The hand-over to
        procmgr (the unmap, the seal, the reply) goes on in the background:
        wait() for the version. Raises what save raised if it has already
        ended in error (a refusal comes before the copy); TimeoutError
        after timeout seconds."""
        if not self._copied.wait(timeout):
            raise TimeoutError("procmgr.save still copying after %s s" % timeout)
        if self._error is not None and not self._thread.is_alive():
            raise self._error

    def wait(self, timeout: Optional[float] = None) -> Optional[int]:
        """The version kept (None outside procmgr); raises what save would
        have raised (StateError: refused). timeout: seconds, then
        TimeoutError with the save still running."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("procmgr.save still copying after %s s" % timeout)
        if self._error is not None:
            raise self._error
        return self._version


@overload
def save(name: str, buffer: Buffer, step: int = ..., prepare: Optional[bool] = ...,
         wait: Literal[True] = ..., _copied: Optional[Callable[[], None]] = ...) -> Optional[int]:
    ...


@overload
def save(name: str, buffer: Buffer, step: int = ..., prepare: Optional[bool] = ..., *,
         wait: Literal[False], _copied: Optional[Callable[[], None]] = ...) -> Saving:
    ...


def save(name: str, buffer: Buffer, step: int = 0, prepare: Optional[bool] = None,
         wait: bool = True, _copied: Optional[Callable[[], None]] = None
         ) -> Union[int, None, Saving]:
    """Keep buffer (bytes, bytearray, memoryview, numpy array: anything with
    the buffer protocol) as this rank's latest version of name, in procmgr's
    memory on this node. One copy, into a memory file whose descriptor
    procmgrd then holds, sealed; it survives this process and is what
    load(name) gets in the next generation of the same global rank.

    Atomic: until this returns, load gets the previous version, and a save
    cut off (the process killed, an exception) never replaces it. step (a
    whole number) is recorded with the version: procmgr's events say how
    old a restored version is and how many steps a failure lost.

    prepare (default: True unless PROCMGR_STATE_PREPARE=0): after the save,
    allocate the next version's memory file in a background thread (with
    PROCMGR_STATE_PREPARE=map also map it and write every page once), so
    that the next save of name is one copy into memory already there. It
    costs one more copy of name's size in this process's memory.

    wait=False: the copy and the hand-over run in a background thread and
    save returns a Saving at once; the training step goes on (a forward and
    backward pass read the parameters, they do not change them) and calls
    its wait() before anything changes buffer (before optimizer.step); or
    its copied(), which returns once the bytes are copied, and leaves the
    hand-over (procmgrd's seal, and with PROCMGR_STATE_PREPARE=map the
    unmap of the prepared mapping) to the background thread. A process that
    ends before wait() returned may lose that version; the previous one
    stays.

    Returns the version number (1, 2, ...), or None outside procmgr.
    Raises StateError when procmgr refuses it (over the site's limit per
    rank or per node: the message names the limit); the rank may go on."""
    if not wait:
        return Saving(lambda copied: save(name, buffer, step, prepare, _copied=copied))
    if not available():
        return None
    view = memoryview(buffer).cast("B")
    return _client.save(name, view, step, WritePath.choose(os.environ, prepare), _copied)


def load_info(name: str) -> Tuple[Optional[memoryview], Optional[Dict[str, int]]]:
    """(memoryview, info) of this rank's latest version of name, or
    (None, None). info: version, size, step, age_ms."""
    if not available():
        return None, None
    text, fd = _client.load(name)
    if text is None or fd is None:
        return None, None
    parts = text.split()
    info = {"version": int(parts[1]), "size": int(parts[2]), "step": int(parts[3]),
            "age_ms": int(parts[4])}
    try:
        # Never written again by this process (swap): the view maps it.
        ident, _ = _memfile.ident(fd)
        _client.loaded.add(ident)
        _client.maps.get(name, {}).pop(ident, None)
        if info["size"] == 0:
            return memoryview(b""), info
        # Every page mapped now, in one call: reading a large version
        # through a plain mapping takes a fault per 4 KiB page.
        m = mmap.mmap(fd, info["size"], mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                      mmap.PROT_READ)
    finally:
        os.close(fd)
    return memoryview(m), info


def load(name: str) -> Optional[memoryview]:
    """This rank's latest saved version of name, mapped read-only (no
    copy), or None (nothing saved, or outside procmgr)."""
    return load_info(name)[0]


def saved() -> Dict[str, Dict[str, Union[int, bool]]]:
    """What this rank has saved: {name: {"version", "size", "step",
    "age_ms", "safe"}} ({} outside procmgr)."""
    if not available():
        return {}
    out: Dict[str, Dict[str, Union[int, bool]]] = {}
    for line in _client.list().split("\n")[1:]:
        n, v, size, step, age, safe = line.split()
        out[n] = {"version": int(v), "size": int(size), "step": int(step),
                  "age_ms": int(age), "safe": safe == "1"}
    return out


def save_torch(name: str, obj: object, step: int = 0) -> Optional[int]:
    """torch.save(obj) straight into the memory file procmgr keeps (a state
    dict, an optimizer's, a dict of both): one serialisation, no other
    copy, no file on a disk. Returns the version, or None outside procmgr;
    StateError as save."""
    import torch
    if not available():
        return None
    fd = _memfile.new(name)
    try:
        with os.fdopen(os.dup(fd), "wb") as f:
            torch.save(obj, f)
        return _client.commit_file(name, fd, step)
    finally:
        os.close(fd)


def load_torch(name: str, map_location: Any = None) -> Any:
    """The object save_torch kept, or None."""
    import torch
    view = load(name)
    if view is None:
        return None
    return torch.load(io.BytesIO(view), map_location=map_location)

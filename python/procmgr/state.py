"""The ranks' state kept in memory by procmgr (see procmgr.save).

The protocol (docs/user-guide.md, "State in memory"): a SOCK_SEQPACKET
Unix socket named by PROCMGR_STATE_SOCK; one request per message, a line
of ASCII, at most one descriptor attached (SCM_RIGHTS); one reply each.
"""
import ctypes
import io
import mmap
import os
import socket
import threading

_ENV_STATE_SOCK = "PROCMGR_STATE_SOCK"
_REPLY_MAX = 16384


class StateError(OSError):
    """procmgr refused a save or a load; the message says why (a limit,
    a name). The program may go on: its last saved version is unchanged."""


_lock = threading.Lock()
_conn = None
_conn_pid = None


def available():
    """True when this rank can keep state in procmgr (PROCMGR_STATE_SOCK)."""
    return bool(os.environ.get(_ENV_STATE_SOCK))


def _sock():
    global _conn, _conn_pid
    # One connection per process (a fork makes its own): procmgr knows the
    # rank by the process that connected.
    if _conn is None or _conn_pid != os.getpid():
        if _conn is not None:
            # A fork's copy of the parent's connection: closing it here
            # leaves the parent's open.
            _drop()
        path = os.environ.get(_ENV_STATE_SOCK)
        if not path:
            return None
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(path)
        _conn, _conn_pid = s, os.getpid()
    return _conn


def _drop():
    global _conn
    if _conn is not None:
        try:
            _conn.close()
        except OSError:
            pass
    _conn = None


def _send(line, fd=None):
    s = _sock()
    data = line.encode("ascii")
    if fd is None:
        s.send(data)
    else:
        socket.send_fds(s, [data], [fd])


def _ask(line, fd=None):
    _send(line, fd)
    return _reply()


def _reply():
    """The answer to the request sent last: (text, descriptor or None);
    StateError for a refusal."""
    s = _sock()
    msg, fds, _flags, _addr = socket.recv_fds(s, _REPLY_MAX, 1)
    if not msg:
        _drop()
        raise StateError("procmgr closed the state socket")
    text = msg.decode("ascii", "replace")
    if text.startswith("err "):
        for f in fds:
            os.close(f)
        # Refused at connect (not a rank of this step): the connection is over.
        if not fds and text.startswith("err refused:"):
            _drop()
        raise StateError(text[4:])
    return text, (fds[0] if fds else None)


def _nbytes(buffer):
    return memoryview(buffer).cast("B").nbytes


# The next version's memory file of each name, made ready in the background
# after a save (name -> _Prepared), so that the next save only copies.
# Where a save's time went beyond the copy (bench/state/save_ways.py and
# loop_cost.py, bench/README.md "State in memory"): a fresh file's pages are
# allocated and zeroed, and a page's first touch through a mapping is a
# fault, taken on the host too in a VM (here ~12 us per 4 KiB page, for
# anonymous memory as well: 50 times the copy). So by default the prepare
# thread allocates the file's pages in the kernel (fallocate: no faults)
# and the save writes into them with pwrite. PROCMGR_STATE_PREPARE=map
# also maps the file and writes every page once ahead, so that the save is
# a memcpy into mapped pages, then unmaps it (procmgrd's seal refuses a
# file still mapped writable): cheaper per save where faults are cheap or
# shared memory has huge pages, but the touch is a full copy's faults per
# save, in the background, which a training loop on few cores pays for
# (loop_cost.py: 29-31 times a memcpy's cost per step at 64 MiB on this
# VM, against 4 with the default). Either way it is this process's own
# memory: one more copy of each saved name while the rank runs.
_prepared = {}


class _Prepared:
    def __init__(self, name, size):
        self.size = size
        self.fd = -1
        self.map = None
        self.error = None
        self.mode = _prepare_mode()  # as the save was asked, not as later
        self.thread = threading.Thread(target=self._run, args=(name,),
                                       name="procmgr-prepare", daemon=True)
        self.thread.start()

    def _run(self, name):
        fd = -1
        try:
            fd = os.memfd_create("procmgr-" + name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, self.size)
            if self.size:
                os.posix_fallocate(fd, 0, self.size)
                if self.mode == "map":
                    self.map = _touched_map(fd, self.size)
            self.fd, fd = fd, -1
        except (OSError, ValueError) as e:
            self.error = e
        finally:
            if fd >= 0:
                os.close(fd)

    def take(self):
        """(descriptor, mapping or None) prepared (the caller owns both),
        or (-1, None)."""
        self.thread.join()
        fd, self.fd = self.fd, -1
        m, self.map = self.map, None
        return fd, m

    def drop(self):
        fd, m = self.take()
        if m is not None:
            m.close()
        if fd >= 0:
            os.close(fd)


def _touched_map(fd, size):
    """A writable shared mapping of fd, every page mapped and written once
    (a byte per page), or None where mapping fails (the save then writes).
    MADV_HUGEPAGE: 2 MiB pages where the site allows them for shared memory
    (/sys/kernel/mm/transparent_hugepage/shmem_enabled: advise or always),
    512 times fewer faults and a cheaper unmap; a no-op elsewhere."""
    try:
        m = mmap.mmap(fd, size, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                      mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError:
        return None
    try:
        # Not inherited by a fork (a DataLoader's workers): a child's
        # writable mapping of the file would make procmgrd's seal refuse
        # this process's next save ("still mapped writable").
        m.madvise(mmap.MADV_DONTFORK)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            try:
                m.madvise(mmap.MADV_HUGEPAGE)
            except OSError:
                pass
        c = ctypes.c_char.from_buffer(m)
        try:
            ctypes.memset(ctypes.addressof(c), 0, size)
        finally:
            del c
    except BaseException:
        m.close()
        raise
    return m


def _prepare_mode():
    """PROCMGR_STATE_PREPARE: "0" none, "map" allocated, mapped and
    touched, anything else (the default) allocated only."""
    return os.environ.get("PROCMGR_STATE_PREPARE", "1")


def _prepare_wanted():
    return _prepare_mode() != "0"


def _take_prepared(name, size):
    """(fd, mapping or None): a memory file of size bytes for name's next
    version: the prepared one when there is one of that size (a fork's
    child has none of its parent's: _forget_parents), else a fresh one (no
    mapping)."""
    p = _prepared.pop(name, None)
    fd, m = -1, None
    if p is not None:
        fd, m = p.take()
        if fd >= 0 and p.size != size:
            if m is not None:
                m.close()
            m = None
    if fd < 0:
        fd = os.memfd_create("procmgr-" + name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        if os.fstat(fd).st_size != size:
            os.ftruncate(fd, size)
    except BaseException:
        if m is not None:
            m.close()
        os.close(fd)
        raise
    return fd, m


# Swap (the default; PROCMGR_STATE_SWAP=0 commits as before): a version is
# handed to procmgrd writable, its size fixed, and procmgrd hands back the
# version it replaced once nothing of procmgrd reads it (the copy to the
# buddy) and no load mapped it. This process keeps each such file mapped,
# so from the third save of a name on, a save is one copy into pages that
# are there and mapped: no allocation, no page faults, no seal (on this VM a
# fresh page's first touch costs ~12 us; bench/README.md "State in
# memory"). Two files per name take turns; the one procmgrd keeps is never
# written by this module until it comes back.
_spares = {}   # name -> _Spare: the file the next save writes into
_maps = {}     # name -> {(dev, inode): mmap}: files swapped in, mapped, kept for their return
_loaded = set()  # inodes this process loaded: never written (a load maps them)


# A fork's child inherits these objects but not the mappings behind them
# (MADV_DONTFORK): were one of them freed in the child, its munmap would
# hit whatever the child mapped at that address since. The child keeps
# them here, never used and never freed, and starts with none of its own.
_inherited = []


def _forget_parents():
    _inherited.append((_spares.copy(), _maps.copy(), _prepared.copy()))
    _spares.clear()
    _maps.clear()
    _prepared.clear()


os.register_at_fork(after_in_child=_forget_parents)


def _swap_wanted():
    return os.environ.get("PROCMGR_STATE_SWAP", "1") != "0"


class _Spare:
    def __init__(self, fd, m, size):
        self.fd = fd
        self.map = m
        self.size = size

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _ino(fd):
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino), st.st_size


def _writable_map(fd, size):
    """A writable shared mapping of a file that is there already (pages
    allocated): mapped in one call (MAP_POPULATE), not inherited by a fork."""
    m = mmap.mmap(fd, size, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                  mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        m.madvise(mmap.MADV_DONTFORK)
    except (AttributeError, OSError):
        pass
    try:
        # 2 MiB pages where the site allows them for shared memory
        # (shmem_enabled advise): fewer TLB misses in every copy into it.
        m.madvise(mmap.MADV_HUGEPAGE)
    except (AttributeError, OSError):
        pass
    return m


def _take_spare(name, size):
    """The spare file of name, if it is of size bytes; else None (and a
    stale one dropped)."""
    sp = _spares.pop(name, None)
    if sp is None:
        return None
    if sp.size != size:
        sp.close()
        _maps.pop(name, None)  # every kept mapping is of the old size
        return None
    return sp


def _swapped(name, fd, m, size, back):
    """After a swap of fd (mapped by m, or None): m is kept for fd's return,
    back (the version replaced, handed back, or None) becomes the next
    spare, and the mappings of files procmgrd keeps no more go."""
    kept = _maps.pop(name, {})
    spare = None
    if back is not None:
        try:
            ident, bsize = _ino(back)
            bm = kept.pop(ident, None)
            if ident in _loaded or bsize != size:
                if bm is not None:
                    bm.close()
                os.close(back)
            else:
                spare = _Spare(back, bm if bm is not None else _writable_map(back, size), size)
        except (OSError, ValueError):
            os.close(back)
    for old in kept.values():
        if old is not m:
            old.close()
    if m is not None:
        _maps[name] = {_ino(fd)[0]: m}
    if spare is not None:
        _spares[name] = spare


_PARALLEL_MIN = 16 << 20


def _cpus():
    """The CPUs this process may run on (a rank bound to one core gains
    nothing from a second copy thread, and pays for starting it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _parts(size):
    return min(_COPY_THREADS, _cpus()) if size >= _PARALLEL_MIN else 1


def _pwrite_part(fd, view, start, end, errors):
    try:
        n = start
        while n < end:
            n += os.pwrite(fd, view[n:end], n)
    except OSError as e:
        errors.append(e)


def _bounds(size, parts):
    step = (size // parts + 4095) & ~4095
    return [(i * step, min(size, (i + 1) * step)) for i in range(parts) if i * step < size]


def _in_parts(run, size):
    """run(start, end) over size bytes, a part per thread (up to
    _COPY_THREADS; the first in this thread). The copies release the GIL."""
    bounds = _bounds(size, _parts(size))
    threads = [threading.Thread(target=run, args=b) for b in bounds[1:]]
    for t in threads:
        t.start()
    if bounds:
        run(*bounds[0])
    for t in threads:
        t.join()


def _write_all(fd, view):
    """view's bytes into fd from offset 0 with write(): a fresh file's
    shared mapping takes a page fault per 4 KiB page (bench/state: many
    times slower). A large buffer is written a part per thread."""
    errors = []
    _in_parts(lambda a, b: _pwrite_part(fd, view, a, b, errors), view.nbytes)
    if errors:
        raise errors[0]


def _copy_into(m, view):
    """view's bytes into the prepared mapping m: a memcpy into pages that
    are there and mapped. ctypes.memmove releases the GIL, so a large
    buffer is copied a part per thread; a read-only buffer (bytes) has no
    address to give it and is copied by the mapping in one."""
    size = view.nbytes
    try:
        src = ctypes.c_char.from_buffer(view)
    except (TypeError, ValueError):
        m[:size] = view
        return
    dst = ctypes.c_char.from_buffer(m)
    try:
        s, d = ctypes.addressof(src), ctypes.addressof(dst)
        _in_parts(lambda a, b: ctypes.memmove(d + a, s + a, b - a), size)
    finally:
        del src, dst


# Threads per large copy. Two: on the 2-CPU machine where this was measured
# more only queued behind each other (bench/README.md "State in memory").
_COPY_THREADS = 2


class Saving:
    """A save running in the background (save(..., wait=False)). The
    buffer must not change until copied() (or wait()) returns: the copy
    reads it."""

    def __init__(self, run):
        self._version = None
        self._error = None
        self._copied = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(run,),
                                        name="procmgr-save", daemon=True)
        self._thread.start()

    def _run(self, run):
        try:
            self._version = run(self._copied.set)
        except BaseException as e:  # handed to wait()'s caller
            self._error = e
        finally:
            self._copied.set()

    def done(self):
        """True once the save has ended (kept or refused)."""
        return not self._thread.is_alive()

    def copied(self, timeout=None):
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

    def wait(self, timeout=None):
        """The version kept (None outside procmgr); raises what save would
        have raised (StateError: refused). timeout: seconds, then
        TimeoutError with the save still running."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("procmgr.save still copying after %s s" % timeout)
        if self._error is not None:
            raise self._error
        return self._version


def save(name, buffer, step=0, prepare=None, wait=True, _copied=None):
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
    if prepare is None:
        prepare = _prepare_wanted()
    view = memoryview(buffer).cast("B")
    size = view.nbytes
    swap = _swap_wanted() and size > 0
    with _lock:
        sp = _take_spare(name, size) if swap else None
        if sp is None:
            # The limits are judged before a fresh file takes memory.
            text, _ = _ask("begin %s %d" % (name, size))
        else:
            # The spare's memory is there already: procmgrd judges the
            # limits while the bytes are copied (a refusal leaves the last
            # version, and the spare is dropped).
            _send("begin %s %d" % (name, size))
        fd, m, back, ticket = -1, None, None, None
        pending = sp is not None  # begin's answer not read yet
        try:
            if sp is not None:
                fd, m = sp.fd, sp.map
                _copy_into(m, view)
                pending = False
                text, _ = _reply()
                ticket = int(text.split()[1])
            else:
                ticket = int(text.split()[1])
                fd, m = _take_prepared(name, size)
                if m is not None:
                    _copy_into(m, view)
                else:
                    _write_all(fd, view)
            if _copied is not None:
                _copied()
            if not swap and m is not None:
                # procmgrd seals the file: no writable mapping may remain.
                m.close()
                m = None
            text, back = _ask("%s %d %d" % ("swap" if swap else "commit", ticket, int(step)), fd)
        except BaseException:
            if m is not None:
                m.close()
            if pending:
                # Cut off in the copy: begin's answer is read (the next
                # request must get its own) and its save aborted.
                try:
                    ticket = int(_reply()[0].split()[1])
                except (OSError, StateError, ValueError, IndexError):
                    pass
            if ticket is not None:
                try:
                    _ask("abort %d" % ticket)
                except (OSError, StateError):
                    pass
            if fd >= 0:
                os.close(fd)
            raise
        if swap:
            _swapped(name, fd, m, size, back)
        elif back is not None:
            os.close(back)
        os.close(fd)
        if prepare and name not in _spares:
            _prepared[name] = _Prepared(name, size)
        return int(text.split()[1])


def load_info(name):
    """(memoryview, info) of this rank's latest version of name, or
    (None, None). info: version, size, step, age_ms."""
    if not available():
        return None, None
    with _lock:
        text, fd = _ask("load %s" % name)
    if text == "none":
        return None, None
    parts = text.split()
    info = {"version": int(parts[1]), "size": int(parts[2]), "step": int(parts[3]),
            "age_ms": int(parts[4])}
    try:
        # Never written again by this process (swap): the view maps it.
        ident, _ = _ino(fd)
        _loaded.add(ident)
        _maps.get(name, {}).pop(ident, None)
        if info["size"] == 0:
            return memoryview(b""), info
        # Every page mapped now, in one call: reading a large version
        # through a plain mapping takes a fault per 4 KiB page.
        m = mmap.mmap(fd, info["size"], mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                      mmap.PROT_READ)
    finally:
        os.close(fd)
    return memoryview(m), info


def load(name):
    """This rank's latest saved version of name, mapped read-only (no
    copy), or None (nothing saved, or outside procmgr)."""
    return load_info(name)[0]


def saved():
    """What this rank has saved: {name: {"version", "size", "step",
    "age_ms", "safe"}} ({} outside procmgr)."""
    if not available():
        return {}
    with _lock:
        text, _ = _ask("list")
    out = {}
    for line in text.split("\n")[1:]:
        n, v, size, step, age, safe = line.split()
        out[n] = {"version": int(v), "size": int(size), "step": int(step),
                  "age_ms": int(age), "safe": safe == "1"}
    return out


def save_torch(name, obj, step=0):
    """torch.save(obj) straight into the memory file procmgr keeps (a state
    dict, an optimizer's, a dict of both): one serialisation, no other
    copy, no file on a disk. Returns the version, or None outside procmgr;
    StateError as save."""
    import torch
    if not available():
        return None
    fd = os.memfd_create("procmgr-" + name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        with os.fdopen(os.dup(fd), "wb") as f:
            torch.save(obj, f)
        size = os.fstat(fd).st_size
        with _lock:
            text, _ = _ask("begin %s %d" % (name, size))
            ticket = int(text.split()[1])
            try:
                text, _ = _ask("commit %d %d" % (ticket, int(step)), fd)
            except StateError:
                raise
            except BaseException:
                try:
                    _ask("abort %d" % ticket)
                except (OSError, StateError):
                    pass
                raise
        return int(text.split()[1])
    finally:
        os.close(fd)


def load_torch(name, map_location=None):
    """The object save_torch kept, or None."""
    import torch
    view = load(name)
    if view is None:
        return None
    return torch.load(io.BytesIO(view), map_location=map_location)

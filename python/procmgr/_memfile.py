"""The memory files procmgr.save writes a version into: made, prepared
ahead, mapped, and written in parts. No state of its own: procmgr.state's
client holds the files between saves."""
from __future__ import annotations

import ctypes
import mmap
import os
import threading
from typing import Callable, List, Optional, Tuple

# Threads per large copy. Two: on the 2-CPU machine where this was measured
# more only queued behind each other (bench/README.md "State in memory").
COPY_THREADS = 2
# A copy this large or larger is split between COPY_THREADS threads.
PARALLEL_MIN = 16 << 20

Ident = Tuple[int, int]  # a file's (st_dev, st_ino)


def new(name: str) -> int:
    """A fresh memory file for name's next version (sealable, as procmgrd
    seals a commit)."""
    return os.memfd_create("procmgr-" + name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def ident(fd: int) -> Tuple[Ident, int]:
    """(the file's (dev, inode), its size)."""
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino), st.st_size


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
class Prepared:
    """The next version's memory file of a name, made ready in a background
    thread after a save, so that the next save only copies. mapped: also
    map it and touch every page (PROCMGR_STATE_PREPARE=map)."""

    def __init__(self, name: str, size: int, mapped: bool) -> None:
        self.size = size
        self.fd = -1
        self.map: Optional[mmap.mmap] = None
        self.error: Optional[BaseException] = None
        self.mapped = mapped
        self.thread = threading.Thread(target=self._run, args=(name,),
                                       name="procmgr-prepare", daemon=True)
        self.thread.start()

    def _run(self, name: str) -> None:
        fd = -1
        try:
            fd = new(name)
            os.ftruncate(fd, self.size)
            if self.size:
                os.posix_fallocate(fd, 0, self.size)
                if self.mapped:
                    self.map = touched_map(fd, self.size)
            self.fd, fd = fd, -1
        except (OSError, ValueError) as e:
            self.error = e
        finally:
            if fd >= 0:
                os.close(fd)

    def take(self) -> Tuple[int, Optional[mmap.mmap]]:
        """(descriptor, mapping or None) prepared (the caller owns both),
        or (-1, None)."""
        self.thread.join()
        fd, self.fd = self.fd, -1
        m, self.map = self.map, None
        return fd, m

    def drop(self) -> None:
        fd, m = self.take()
        if m is not None:
            m.close()
        if fd >= 0:
            os.close(fd)


class Spare:
    """A file procmgrd handed back (swap), mapped: the next save of its
    name writes into it."""

    def __init__(self, fd: int, m: mmap.mmap, size: int) -> None:
        self.fd = fd
        self.map = m
        self.size = size

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def touched_map(fd: int, size: int) -> Optional[mmap.mmap]:
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


def writable_map(fd: int, size: int) -> mmap.mmap:
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


def _cpus() -> int:
    """The CPUs this process may run on (a rank bound to one core gains
    nothing from a second copy thread, and pays for starting it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _parts(size: int) -> int:
    return min(COPY_THREADS, _cpus()) if size >= PARALLEL_MIN else 1


def _pwrite_part(fd: int, view: memoryview, start: int, end: int,
                 errors: List[OSError]) -> None:
    try:
        n = start
        while n < end:
            n += os.pwrite(fd, view[n:end], n)
    except OSError as e:
        errors.append(e)


def _bounds(size: int, parts: int) -> List[Tuple[int, int]]:
    step = (size // parts + 4095) & ~4095
    return [(i * step, min(size, (i + 1) * step)) for i in range(parts) if i * step < size]


def _in_parts(run: Callable[[int, int], object], size: int) -> None:
    """run(start, end) over size bytes, a part per thread (up to
    COPY_THREADS; the first in this thread). The copies release the GIL."""
    bounds = _bounds(size, _parts(size))
    threads = [threading.Thread(target=run, args=b) for b in bounds[1:]]
    for t in threads:
        t.start()
    if bounds:
        run(*bounds[0])
    for t in threads:
        t.join()


def write_all(fd: int, view: memoryview) -> None:
    """view's bytes into fd from offset 0 with write(): a fresh file's
    shared mapping takes a page fault per 4 KiB page (bench/state: many
    times slower). A large buffer is written a part per thread."""
    errors: List[OSError] = []
    _in_parts(lambda a, b: _pwrite_part(fd, view, a, b, errors), view.nbytes)
    if errors:
        raise errors[0]


def copy_into(m: mmap.mmap, view: memoryview) -> None:
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

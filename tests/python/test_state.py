"""procmgr.save's prepared memory file: the next version's file is allocated
in the background after a save, and the next save writes into it.

The other end is a small double of procmgrd's state socket (the real one is
tested with procmgrd in tests/integration/state.bats): SOCK_SEQPACKET, the
same request lines and replies, the committed descriptor kept and sealed as
procmgrd seals it (F_SEAL_SHRINK|GROW|WRITE), which fails if anyone still
maps the file writable."""
import fcntl
import os
import socket
import tempfile
import threading
import unittest
from unittest import mock

from procmgr import state

SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


class FakeStateServer:
    """begin/commit/abort as procmgrd answers them; commits() lists
    (name, step, fd) of what was kept, the descriptors sealed."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(path)
        self.sock.listen(4)
        self.kept = []
        self.tickets = {}
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._conn, args=(conn,), daemon=True).start()

    def _conn(self, conn):
        with conn:
            while True:
                msg, fds, _, _ = socket.recv_fds(conn, 4096, 1)
                if not msg:
                    return
                words = msg.decode().split()
                if words[0] == "begin" and words[1].startswith("refuse"):
                    conn.send(b"err state_max_rank: 4096 bytes per rank; this save needs more")
                elif words[0] == "begin":
                    t = len(self.tickets) + 1
                    self.tickets[t] = (words[1], int(words[2]))
                    conn.send(b"ok %d" % t)
                elif words[0] == "commit":
                    name, size = self.tickets.pop(int(words[1]))
                    fd = fds[0]
                    if os.fstat(fd).st_size != size:
                        os.close(fd)
                        conn.send(b"err size")
                        continue
                    try:
                        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
                    except OSError:
                        os.close(fd)
                        conn.send(b"err still mapped writable: unmap it before saving")
                        continue
                    self.kept.append((name, int(words[2]), fd))
                    conn.send(b"ok %d" % sum(1 for k in self.kept if k[0] == name))
                elif words[0] == "load":
                    mine = [k for k in self.kept if k[0] == words[1]]
                    if not mine:
                        conn.send(b"none")
                        continue
                    fd = mine[-1][2]
                    reply = b"ok %d %d %d 0" % (len(mine), os.fstat(fd).st_size, mine[-1][1])
                    socket.send_fds(conn, [reply], [fd])
                elif words[0] == "abort":
                    self.tickets.pop(int(words[1]), None)
                    conn.send(b"ok")
                else:
                    conn.send(b"err unknown")

    def content(self, i):
        fd = self.kept[i][2]
        return os.pread(fd, os.fstat(fd).st_size, 0)

    def close(self):
        self.sock.close()
        for _, _, fd in self.kept:
            os.close(fd)


def ino(fd):
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


class _SaveCases:
    """Every save's rules, run with each way of preparing the next file
    (MODE: PROCMGR_STATE_PREPARE)."""
    MODE = "1"

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        path = os.path.join(self.dir.name, "state.sock")
        self.server = FakeStateServer(path)
        self.env = mock.patch.dict(os.environ, {"PROCMGR_STATE_SOCK": path,
                                                "PROCMGR_STATE_PREPARE": self.MODE,
                                                "PROCMGR_STATE_SWAP": "0"})
        self.env.start()
        state._client.drop()

    def tearDown(self):
        for p in list(state._client.prepared.values()):
            p.drop()
        state._client.prepared.clear()
        state._client.drop()
        self.env.stop()
        self.server.close()
        self.dir.cleanup()

    def prepared_fd(self, name):
        p = state._client.prepared[name]
        p.thread.join()
        self.assertIsNone(p.error)
        return p.fd

    def test_next_save_writes_into_the_prepared_file(self):
        self.assertEqual(state.save("model", b"a" * 100000, step=1), 1)
        fd = self.prepared_fd("model")
        # Allocated ahead: its blocks are there before the next save.
        st = os.fstat(fd)
        self.assertEqual(st.st_size, 100000)
        self.assertGreaterEqual(st.st_blocks * 512, 100000)
        before = ino(fd)
        self.assertEqual(state.save("model", b"b" * 100000, step=2), 2)
        self.assertEqual(ino(self.server.kept[1][2]), before)
        self.assertEqual(self.server.content(1), b"b" * 100000)
        # The first version is untouched by the second save.
        self.assertEqual(self.server.content(0), b"a" * 100000)

    def test_read_only_and_writable_buffers(self):
        # bytes has no address for ctypes: copied by the mapping itself; a
        # bytearray, a memoryview of one, an array: by memmove, in parts
        # over _PARALLEL_MIN.
        import array
        big = bytearray(os.urandom(1 << 16)) * ((state._memfile.PARALLEL_MIN >> 16) + 3)
        cases = [b"r" * 70000, bytearray(b"w" * 70000), memoryview(bytearray(b"v" * 70000)),
                 array.array("d", [1.5] * 8750), big]
        for i, buf in enumerate(cases):
            name = "k%d" % i
            state.save(name, buf)
            state.save(name, buf)  # into the prepared file
            kept = [k for k in self.server.kept if k[0] == name]
            fd = kept[1][2]
            self.assertEqual(os.pread(fd, os.fstat(fd).st_size, 0),
                             memoryview(buf).cast("B").tobytes(), name)

    def test_a_prepared_file_of_another_size_is_not_used(self):
        state.save("s", bytearray(b"1" * 8192))
        state._client.prepared["s"].thread.join()
        state.save("s", bytearray(b"2" * 5000))
        self.assertEqual(self.server.content(1), b"2" * 5000)
        state.save("s", bytearray(b"3" * 5000))
        self.assertEqual(self.server.content(2), b"3" * 5000)

    def test_a_new_size_is_written_whole(self):
        state.save("opt", b"x" * 50000)
        state.save("opt", b"yz" * 40000)
        self.assertEqual(self.server.content(1), b"yz" * 40000)
        state.save("opt", b"q" * 10)
        self.assertEqual(self.server.content(2), b"q" * 10)

    def test_a_large_buffer_is_written_whole_in_parts(self):
        # Over state._memfile.PARALLEL_MIN: written by several threads, each a part;
        # an odd size so the last part is short.
        data = bytes(range(256)) * ((20 << 20) // 256) + b"tail!"
        self.assertGreater(len(data), state._memfile.PARALLEL_MIN)
        state.save("big", data)
        state.save("big", data[::-1])
        self.assertEqual(self.server.content(0), data)
        self.assertEqual(self.server.content(1), data[::-1])

    def test_load_maps_the_latest_version(self):
        self.assertIsNone(state.load("w"))
        state.save("w", b"old" * 5000, step=3)
        state.save("w", b"new" * 5000, step=4)
        view, info = state.load_info("w")
        self.assertEqual(bytes(view), b"new" * 5000)
        self.assertEqual((info["version"], info["size"], info["step"]), (2, 15000, 4))
        view.release()

    def test_a_save_in_the_background(self):
        data = bytearray(b"s" * 200000)
        h = state.save("bg", data, step=9, wait=False)
        self.assertIsInstance(h, state.Saving)
        self.assertEqual(h.wait(timeout=30), 1)
        self.assertTrue(h.done())
        self.assertEqual(self.server.content(0), bytes(data))
        self.assertEqual(self.server.kept[0][1], 9)

    def test_the_buffer_may_change_once_copied(self):
        data = bytearray(b"1" * 300000)
        state.save("c", data)
        state._client.prepared["c"].thread.join()
        h = state.save("c", data, step=2, wait=False)
        h.copied(timeout=30)
        data[:] = b"2" * 300000  # the optimizer's step, the hand-over still going
        self.assertEqual(h.wait(timeout=30), 2)
        self.assertEqual(self.server.content(1), b"1" * 300000)
        # Without a prepared mapping (the first save writes): the same.
        h = state.save("c2", data, wait=False)
        h.copied(timeout=30)
        data[:] = b"3" * 300000
        h.wait(timeout=30)
        self.assertEqual(self.server.content(2), b"2" * 300000)

    def test_a_refusal_in_the_background_reaches_copied(self):
        h = state.save("refuse-me", b"x" * 8192, wait=False)
        h._thread.join(30)
        with self.assertRaises(state.StateError):
            h.copied(timeout=30)

    def test_a_refusal_in_the_background_reaches_wait(self):
        h = state.save("refuse-me", b"x" * 8192, wait=False)
        with self.assertRaises(state.StateError) as e:
            h.wait(timeout=30)
        self.assertIn("state_max_rank", str(e.exception))
        self.assertEqual(self.server.kept, [])

    def test_no_prepare_keeps_no_file(self):
        state.save("a", b"1" * 4096, prepare=False)
        self.assertNotIn("a", state._client.prepared)
        with mock.patch.dict(os.environ, {"PROCMGR_STATE_PREPARE": "0"}):
            state.save("b", b"2" * 4096)
        self.assertNotIn("b", state._client.prepared)
        self.assertEqual(self.server.content(1), b"2" * 4096)

    def test_a_forked_child_does_not_write_into_its_parents_file(self):
        state.save("m", b"p" * 8192)
        parent = ino(self.prepared_fd("m"))
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                state.save("m", b"c" * 8192)
                os.write(w, b"ok")
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        self.assertEqual(os.read(r, 2), b"ok")
        os.close(r)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        # The child's save came in a file of its own: the parent's prepared
        # file still holds nothing written and is the parent's next one.
        self.assertNotEqual(ino(self.server.kept[1][2]), parent)
        self.assertEqual(self.server.content(1), b"c" * 8192)
        self.assertEqual(ino(self.prepared_fd("m")), parent)
        state.save("m", b"n" * 8192)
        self.assertEqual(ino(self.server.kept[2][2]), parent)

    def test_a_live_forked_child_does_not_block_the_seal(self):
        # A child forked while the prepared file is mapped (a DataLoader's
        # worker) and still alive at the parent's next save: the mapping
        # was not inherited, so the double's F_SEAL_WRITE (procmgrd's)
        # is not refused with EBUSY.
        state.save("d", bytearray(b"1" * 65536))
        state._client.prepared["d"].thread.join()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(w)
                os.read(r, 1)
            finally:
                os._exit(0)
        os.close(r)
        try:
            self.assertEqual(state.save("d", bytearray(b"2" * 65536)), 2)
            self.assertEqual(self.server.content(1), b"2" * 65536)
        finally:
            os.close(w)
            os.waitpid(pid, 0)

    def test_a_refused_commit_leaves_the_last_version(self):
        state.save("r", b"1" * 4096)
        with mock.patch.object(state._client, "take_prepared", side_effect=OSError("no memory")):
            with self.assertRaises(OSError):
                state.save("r", b"2" * 4096)
        self.assertEqual(len(self.server.kept), 1)
        self.assertEqual(self.server.tickets, {})


class PreparedSave(_SaveCases, unittest.TestCase):
    def test_the_prepared_file_is_allocated_not_mapped(self):
        # By default the pages are allocated in the kernel (no fault per
        # page, which in a VM costs ~50 copies' time: bench/README.md) and
        # the save writes into them; nothing of the file is mapped.
        state.save("t", bytearray(b"a" * 300000))
        fd = self.prepared_fd("t")
        self.assertIsNone(state._client.prepared["t"].map)
        self.assertGreaterEqual(os.fstat(fd).st_blocks * 512, 300000)
        with mock.patch.object(state.mmap, "mmap", side_effect=AssertionError("mapped")):
            state.save("t", bytearray(b"b" * 300000))
        self.assertEqual(self.server.content(1), b"b" * 300000)


class MappedPreparedSave(_SaveCases, unittest.TestCase):
    MODE = "map"

    def test_the_prepared_file_is_mapped_and_touched_ahead(self):
        # The save is then a copy into pages already there and mapped: the
        # prepare thread wrote every page once (its blocks are allocated and
        # the mapping is open), and the save leaves no writable mapping
        # (the double seals F_SEAL_WRITE as procmgrd does: EBUSY otherwise).
        state.save("t", bytearray(b"a" * 300000))
        p = state._client.prepared["t"]
        p.thread.join()
        self.assertIsNone(p.error)
        self.assertIsNotNone(p.map)
        self.assertEqual(len(p.map), 300000)
        self.assertEqual(p.map[:4096], b"\0" * 4096)
        self.assertGreaterEqual(os.fstat(p.fd).st_blocks * 512, 300000)
        state.save("t", bytearray(b"b" * 300000))
        self.assertEqual(self.server.content(1), b"b" * 300000)
        self.assertTrue(p.map is None and p.fd == -1)

    def test_where_mapping_fails_the_save_writes(self):
        with mock.patch.object(state.mmap, "mmap", side_effect=OSError("ENOMEM")):
            state.save("f", bytearray(b"1" * 8192))
            state._client.prepared["f"].thread.join()
            self.assertIsNone(state._client.prepared["f"].map)
            state.save("f", bytearray(b"2" * 8192))
        self.assertEqual(self.server.content(1), b"2" * 8192)


def _reset_swap():
    for sp in state._client.spares.values():
        sp.map.close()
        sp.close()
    state._client.spares.clear()
    for kept in state._client.maps.values():
        for m in kept.values():
            m.close()
    state._client.maps.clear()
    state._client.loaded.clear()


@unittest.skipUnless(os.access(os.environ.get("PM_TEST_STATESRV", "/nonexistent"), os.X_OK),
                     "PM_TEST_STATESRV: procmgrd's state socket (tests/unit/pm-statesrv)")
class SwapSave(unittest.TestCase):
    """The default save (swap) against procmgrd's own state socket code
    (io/statesrv.c in tests/unit/pm-statesrv): two files per name take
    turns, and from the fourth save on a save maps nothing."""

    def setUp(self):
        import subprocess
        self.dir = tempfile.TemporaryDirectory()
        path = os.path.join(self.dir.name, "state.sock")
        # The refusal's test: 40,000 bytes per node.
        limits = ["17179869184", "40000"] if "refusal" in self._testMethodName else []
        self.srv = subprocess.Popen([os.environ["PM_TEST_STATESRV"], path] + limits,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.assertEqual(self.srv.stdout.readline(), b"ready\n")
        self.env = mock.patch.dict(os.environ, {"PROCMGR_STATE_SOCK": path})
        self.env.start()
        os.environ.pop("PROCMGR_STATE_SWAP", None)
        os.environ.pop("PROCMGR_STATE_PREPARE", None)
        state._client.drop()
        _reset_swap()

    def tearDown(self):
        for p in list(state._client.prepared.values()):
            p.drop()
        state._client.prepared.clear()
        _reset_swap()
        state._client.drop()
        self.env.stop()
        self.srv.stdin.close()
        self.assertEqual(self.srv.wait(10), 0)
        self.srv.stdout.close()
        self.assertEqual(os.listdir(self.dir.name), [])  # its socket gone
        self.dir.cleanup()

    def latest(self, name):
        """The latest version's bytes, read in a child. A load makes the
        version's file read-only for good (procmgrd seals it: it never
        comes back to be written), so tests call this at their end."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                state._client.drop()
                v = state.load(name)
                os.write(w, bytes(v) if v is not None else b"none")
            finally:
                os._exit(0)
        os.close(w)
        out = b""
        while True:
            b = os.read(r, 1 << 20)
            if not b:
                break
            out += b
        os.close(r)
        os.waitpid(pid, 0)
        return out

    def test_files_take_turns_and_saves_stop_mapping(self):
        size = 256 * 1024
        files = []
        for i in range(1, 4):
            self.assertEqual(state.save("m", bytearray([i]) * size, step=i), i)
            self.assertEqual(state.saved()["m"]["step"], i)
            sp = state._client.spares.get("m")
            files.append(ino(sp.fd) if sp else None)
        # The first save had nothing to hand back; the second got the
        # first's file back, the third the second's.
        self.assertIsNone(files[0])
        self.assertIsNotNone(files[1])
        self.assertNotEqual(files[1], files[2])
        # From here on: no file made, nothing mapped; the two files alternate.
        with mock.patch.object(state.mmap, "mmap", side_effect=AssertionError("mapped")), \
                mock.patch.object(state.os, "memfd_create",
                                  side_effect=AssertionError("a new file")):
            for i in range(4, 9):
                self.assertEqual(state.save("m", bytearray([i]) * size, step=i), i)
                self.assertEqual(ino(state._client.spares["m"].fd), files[1 + i % 2])
        self.assertEqual(self.latest("m"), bytes([8]) * size)
        self.assertEqual(state._client.prepared, {})  # nothing prepared beside the spare

    def test_a_loaded_version_is_never_written_again(self):
        size = 64 * 1024
        for i in range(1, 4):
            state.save("m", bytearray([i]) * size, step=i)
        view = state.load("m")
        self.assertEqual(bytes(view), bytes([3]) * size)
        for i in range(4, 9):
            state.save("m", bytearray([i]) * size, step=i)
        self.assertEqual(bytes(view), bytes([3]) * size)
        self.assertEqual(self.latest("m"), bytes([8]) * size)

    def test_a_new_size_starts_over(self):
        for i in range(1, 4):
            state.save("m", bytearray([i]) * 8192, step=i)
        self.assertEqual(state.save("m", bytearray([9]) * 20000, step=9), 4)
        self.assertNotIn("m", state._client.spares)  # the 8192-byte file was not kept
        state.save("m", bytearray([10]) * 20000, step=10)
        self.assertEqual(state._client.spares["m"].size, 20000)
        self.assertEqual(self.latest("m"), bytes([10]) * 20000)

    def test_a_forked_child_never_writes_into_its_parents_files(self):
        for i in range(1, 4):
            state.save("m", bytearray([i]) * 8192, step=i)
        parent_spare = ino(state._client.spares["m"].fd)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                # None of the parent's files or mappings (not mapped here,
                # MADV_DONTFORK), yet their objects kept alive: freeing one
                # would unmap whatever the child has at that address.
                if state._client.spares or state._client.maps or not state._client.inherited:
                    os._exit(4)
                kept = state._client.inherited[-1][0]["m"].map
                state._client.drop()  # its own connection, as procmgr.save makes
                state.save("m", bytearray([7]) * 8192, step=7)
                if state._client.inherited[-1][0]["m"].map is not kept or kept.closed:
                    os._exit(5)
                code = 0 if ino(state._client.spares.get("m").fd if "m" in state._client.spares
                                else os.open("/", os.O_RDONLY)) != parent_spare else 3
            finally:
                os._exit(code)
        _, st = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(st), 0)
        self.assertEqual(self.latest("m"), bytes([7]) * 8192)
        # The parent's spare is untouched and still its to write.
        self.assertEqual(state.save("m", bytearray([8]) * 8192, step=8), 5)
        self.assertEqual(self.latest("m"), bytes([8]) * 8192)

    def test_a_refusal_while_copying_into_the_spare(self):
        # procmgrd judges the limit (40,000 bytes a node here) while the
        # spare is written: refused, the last version stays, the spare is
        # dropped, and the next request gets its own answer.
        for i in range(1, 4):
            state.save("m", bytearray([i]) * 8192, step=i)
        self.assertIn("m", state._client.spares)
        state.save("x", bytearray(24000))
        with self.assertRaises(state.StateError) as e:
            state.save("m", bytearray([4]) * 8192, step=4)
        self.assertIn("per-node limit of 39.1 KiB", str(e.exception))
        self.assertNotIn("m", state._client.spares)
        self.assertEqual(state.saved()["m"]["step"], 3)
        state.save("x", bytearray(100))
        self.assertEqual(state.save("m", bytearray([5]) * 8192, step=5), 4)
        self.assertEqual(self.latest("m"), bytes([5]) * 8192)

    def test_a_save_cut_off_in_the_copy(self):
        # An exception in the copy (a signal's KeyboardInterrupt): begin's
        # answer is read and its save aborted; the last version stays and
        # the next save works.
        for i in range(1, 4):
            state.save("m", bytearray([i]) * 8192, step=i)
        with mock.patch.object(state._memfile, "copy_into", side_effect=KeyboardInterrupt):
            with self.assertRaises(KeyboardInterrupt):
                state.save("m", bytearray([4]) * 8192, step=4)
        self.assertEqual(state.saved()["m"]["step"], 3)
        self.assertEqual(state.save("m", bytearray([5]) * 8192, step=5), 4)
        self.assertEqual(self.latest("m"), bytes([5]) * 8192)

    def test_swap_off_commits_sealed(self):
        os.environ["PROCMGR_STATE_SWAP"] = "0"
        try:
            for i in range(1, 4):
                state.save("m", bytearray([i]) * 8192, step=i)
            self.assertEqual(state._client.spares, {})
            self.assertEqual(self.latest("m"), bytes([3]) * 8192)
        finally:
            del os.environ["PROCMGR_STATE_SWAP"]


class WritePathTest(unittest.TestCase):
    """The write path from the environment and save's prepare argument:
    every combination of the two variables' values (unset, off, on, map,
    anything else) and of the argument."""

    def test_every_combination(self):
        for swap in (None, "0", "1", "yes"):
            for mode in (None, "0", "1", "map", "other"):
                env = {k: v for k, v in (("PROCMGR_STATE_SWAP", swap),
                                         ("PROCMGR_STATE_PREPARE", mode)) if v is not None}
                for arg in (None, True, False):
                    with self.subTest(swap=swap, mode=mode, arg=arg):
                        p = state.WritePath.choose(env, arg)
                        self.assertEqual(p.swap, swap != "0")
                        wanted = mode != "0" if arg is None else arg
                        self.assertEqual(p.prepare, "none" if not wanted else
                                         "map" if mode == "map" else "alloc")


class ShapeTest(unittest.TestCase):
    """What this process holds between saves is in one object (state's
    _Client), not in module globals: no `global` statement and no
    module-level dict, list or set in state.py or _memfile.py. And no file
    of the package over 650 lines (issue 33)."""
    PKG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")

    def test_no_module_level_mutable_state(self):
        import ast
        for f in ("state.py", "_memfile.py"):
            with open(os.path.join(self.PKG, "procmgr", f), encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                self.assertNotIsInstance(node, ast.Global, "%s:%d" % (f, getattr(node, "lineno", 0)))
            for node in tree.body:
                value = getattr(node, "value", None)
                mutable = isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp,
                                             ast.ListComp, ast.SetComp)) or (
                    isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id in ("dict", "list", "set"))
                names = [t.id for t in getattr(node, "targets", [getattr(node, "target", None)])
                         if isinstance(t, ast.Name)]
                if names == ["__all__"]:
                    continue
                self.assertFalse(mutable and isinstance(node, (ast.Assign, ast.AnnAssign)),
                                 "%s:%d: a module-level container" % (f, node.lineno))

    def test_no_file_over_650_lines(self):
        for top, _, files in os.walk(self.PKG):
            for f in files:
                if f.endswith(".py"):
                    with open(os.path.join(top, f), encoding="utf-8") as fh:
                        self.assertLessEqual(sum(1 for _ in fh), 650, os.path.join(top, f))


if __name__ == "__main__":
    unittest.main()

"""The procmgr Python module, as a program under procmgr uses it: the
environment procmgr gives a rank, a real heartbeat file watched the way
procmgr-rank watches it (inotify, the same events), a real listening port."""
import ctypes
import ctypes.util
import os
import socket
import struct
import tempfile
import threading
import time
import unittest
from unittest import mock

import procmgr

# procmgr-rank's watch on the heartbeat file's directory (runtime/rank/rank.c):
# IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE, for the file's name.
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_CREATE = 0x2, 0x4, 0x8, 0x100
IN_NONBLOCK = os.O_NONBLOCK
WATCHED = IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE


class Watch:
    """An inotify watch like the supervisor's; seen(name) drains its events."""

    def __init__(self, directory):
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = self.libc.inotify_init1(IN_NONBLOCK)
        if self.fd < 0 or self.libc.inotify_add_watch(self.fd, directory.encode(), WATCHED) < 0:
            raise OSError(ctypes.get_errno(), "inotify")

    def seen(self, name):
        found = False
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return found
            off = 0
            while off < len(buf):
                _, mask, _, n = struct.unpack_from("iIII", buf, off)
                got = buf[off + 16:off + 16 + n].split(b"\0", 1)[0].decode()
                found |= got == name and bool(mask & WATCHED)
                off += 16 + n

    def close(self):
        os.close(self.fd)


class Heartbeat(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "heartbeat.0")
        self.watch = Watch(self.dir.name)

    def tearDown(self):
        self.watch.close()
        self.dir.cleanup()

    def test_outside_procmgr_is_a_no_op(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertFalse(procmgr.heartbeat())
            self.assertFalse(procmgr.heartbeat(step=3))
        self.assertEqual(os.listdir(self.dir.name), [])

    def test_touch_is_seen(self):
        with mock.patch.dict(os.environ, {"PROCMGR_HEARTBEAT": self.path}):
            # The supervisor removes the file at each start: the first
            # heartbeat creates it.
            self.assertTrue(procmgr.heartbeat())
            self.assertTrue(self.watch.seen("heartbeat.0"))
            self.assertTrue(procmgr.heartbeat())
            self.assertTrue(self.watch.seen("heartbeat.0"))
        self.assertEqual(os.listdir(self.dir.name), ["heartbeat.0"])

    def test_step_written_whole_and_seen(self):
        with mock.patch.dict(os.environ, {"PROCMGR_HEARTBEAT": self.path}):
            self.assertTrue(procmgr.heartbeat(step=41))
            self.assertTrue(self.watch.seen("heartbeat.0"))
            before = os.stat(self.path).st_mtime_ns
            time.sleep(0.01)
            # Over an existing file: a rename alone would not be seen.
            self.assertTrue(procmgr.heartbeat(step=42))
            self.assertTrue(self.watch.seen("heartbeat.0"))
            self.assertGreater(os.stat(self.path).st_mtime_ns, before)
        with open(self.path) as f:
            self.assertEqual(f.read(), "42\n")
        # No temporary file left behind.
        self.assertEqual(os.listdir(self.dir.name), ["heartbeat.0"])

    def test_compute_time_in_ms(self):
        # "STEP COMPUTE_MS": what procmgr-rank parses (common/slowsum.c).
        with mock.patch.dict(os.environ, {"PROCMGR_HEARTBEAT": self.path}):
            self.assertTrue(procmgr.heartbeat(step=7, compute=0.0125))
            self.assertTrue(self.watch.seen("heartbeat.0"))
        with open(self.path) as f:
            self.assertEqual(f.read(), "7 12.500\n")
        with mock.patch.dict(os.environ, {"PROCMGR_HEARTBEAT": self.path}):
            with self.assertRaises(ValueError):
                procmgr.heartbeat(step=8, compute="fast")
        self.assertEqual(os.listdir(self.dir.name), ["heartbeat.0"])

    def test_bad_step_refused_and_nothing_left(self):
        with mock.patch.dict(os.environ, {"PROCMGR_HEARTBEAT": self.path}):
            with self.assertRaises(ValueError):
                procmgr.heartbeat(step="ten")
        self.assertEqual(os.listdir(self.dir.name), [])


class Report(unittest.TestCase):
    """procmgr.report: the line a sweep's supervisor reads (sweep_metric.h)."""

    def test_outside_a_sweep_is_a_no_op(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            procmgr.report(loss=0.5)

    def test_last_call_is_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.0.result")
            with mock.patch.dict(os.environ, {"PROCMGR_RESULT_FILE": path}):
                procmgr.report(loss=0.5)
                procmgr.report(loss=0.125)
                with open(path) as f:
                    self.assertEqual(f.read(), "loss=0.125\n")
                for value, text in ((3, "3"), (1e-05, "1e-05"), (-2.5, "-2.5"),
                                    (1e300, "1e+300")):
                    procmgr.report(**{"acc.top-1": value})
                    with open(path) as f:
                        self.assertEqual(f.read(), "acc.top-1=%s\n" % text)

    def test_refused_before_writing(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.0.result")
            with mock.patch.dict(os.environ, {"PROCMGR_RESULT_FILE": path}):
                for bad in ({}, {"a": 1, "b": 2}, {"loss": float("nan")},
                            {"loss": float("inf")}, {"loss": "0.5"}, {"loss": True},
                            {"x" * 33: 1}, {"l\u00f6ss": 1}):
                    with self.assertRaises(ValueError, msg=repr(bad)):
                        procmgr.report(**bad)
                self.assertFalse(os.path.exists(path))


class Environment(unittest.TestCase):
    def test_restart_count(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(procmgr.restart_count(), 0)
            self.assertFalse(procmgr.under_procmgr())
        with mock.patch.dict(os.environ, {"TORCHELASTIC_RESTART_COUNT": "2"}, clear=True):
            self.assertEqual(procmgr.restart_count(), 2)
        with mock.patch.dict(os.environ, {"PROCMGR_RESTART_COUNT": "3",
                                          "TORCHELASTIC_RESTART_COUNT": "2"}, clear=True):
            self.assertEqual(procmgr.restart_count(), 3)
            self.assertTrue(procmgr.under_procmgr())

    def test_ranks(self):
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual((procmgr.rank(), procmgr.local_rank(), procmgr.world_size()),
                             (0, 0, 1))
        with mock.patch.dict(os.environ, {"SLURM_PROCID": "5", "SLURM_LOCALID": "1",
                                          "SLURM_NTASKS": "8"}, clear=True):
            self.assertEqual((procmgr.rank(), procmgr.local_rank(), procmgr.world_size()),
                             (5, 1, 8))
        with mock.patch.dict(os.environ, {"SLURM_PROCID": "5", "RANK": "6", "LOCAL_RANK": "0",
                                          "WORLD_SIZE": "7"}, clear=True):
            self.assertEqual((procmgr.rank(), procmgr.local_rank(), procmgr.world_size()),
                             (6, 0, 7))

    def test_ready_returns_at_once(self):
        t0 = time.monotonic()
        with mock.patch.dict(os.environ, {"PROCMGR_RESTART_COUNT": "1"}):
            self.assertFalse(procmgr.ready())
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertFalse(procmgr.ready())
        self.assertLess(time.monotonic() - t0, 0.5)

    def _supervised(self, lines):
        """ready() against a supervisor's end of a socketpair that answers
        lines once it reads "ready"; what it read, and ready()'s result."""
        ours, theirs = socket.socketpair()
        got = []

        def supervisor():
            got.append(ours.recv(100))
            ours.sendall(lines)
            ours.close()
        t = threading.Thread(target=supervisor)
        t.start()
        env = {"PROCMGR_WARM_FD": str(theirs.detach()), "RANK": "1"}
        try:
            with mock.patch.dict(os.environ, env, clear=True):
                try:
                    result = procmgr.ready()
                finally:
                    after = dict(os.environ)
        finally:
            t.join()
        return got, result, after

    def test_ready_waits_for_the_generation(self):
        got, result, env = self._supervised(
            b"env PROCMGR_RESTART_COUNT=2\nenv RANK=5\nenv MASTER_ADDR=n 2=x\nstart 2\n")
        self.assertEqual(got, [b"ready\n"])
        self.assertTrue(result)
        self.assertEqual(env["RANK"], "5")
        self.assertEqual(env["PROCMGR_RESTART_COUNT"], "2")
        self.assertEqual(env["MASTER_ADDR"], "n 2=x")
        # The channel is used once; children do not inherit it.
        self.assertNotIn("PROCMGR_WARM_FD", env)

    def test_ready_refuses_a_bad_line(self):
        with self.assertRaisesRegex(RuntimeError, "unexpected line"):
            self._supervised(b"hello\n")
        with self.assertRaisesRegex(RuntimeError, "closed before"):
            self._supervised(b"env A=1\n")

    def test_standby_argv(self):
        from procmgr import standby
        self.assertEqual(standby._parse(["torch,numpy", "--", "-u", "t.py", "a"]),
                         (["torch", "numpy"], ("script", "t.py", ["a"]), True))
        self.assertEqual(standby._parse(["x", "--", "-m", "pkg.mod", "b"]),
                         (["x"], ("module", "pkg.mod", ["b"]), False))
        for bad in (["x", "--", "-c", "print(1)"], ["x", "--"], ["x"]):
            with self.assertRaises(SystemExit):
                with mock.patch("sys.stderr"):
                    standby._parse(bad)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WaitStore(unittest.TestCase):
    def env(self, rank, port):
        return {"RANK": str(rank), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}

    def test_rank0_and_no_master_do_not_wait(self):
        with mock.patch.dict(os.environ, self.env(0, free_port())):
            self.assertTrue(procmgr.wait_store(timeout=5))
        with mock.patch.dict(os.environ, {"RANK": "1"}, clear=True):
            self.assertTrue(procmgr.wait_store(timeout=5))

    def test_waits_for_the_port_to_listen(self):
        port = free_port()
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

        def listen_later():
            time.sleep(0.3)
            srv.bind(("127.0.0.1", port))
            srv.listen()

        th = threading.Thread(target=listen_later)
        th.start()
        t0 = time.monotonic()
        with mock.patch.dict(os.environ, self.env(1, port)):
            self.assertTrue(procmgr.wait_store(timeout=10))
        took = time.monotonic() - t0
        th.join()
        srv.close()
        # Not before it listened, and well within torch's 1 s retry after.
        self.assertGreaterEqual(took, 0.29)
        self.assertLess(took, 0.3 + 0.5)

    def test_gives_up_at_the_timeout(self):
        with mock.patch.dict(os.environ, self.env(3, free_port())):
            t0 = time.monotonic()
            self.assertFalse(procmgr.wait_store(timeout=0.2))
            self.assertLess(time.monotonic() - t0, 2)


if __name__ == "__main__":
    unittest.main()

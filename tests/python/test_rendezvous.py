"""procmgr.open_store: rank 0's store opened at the generation's release,
the other ranks' connection made only once it listens.

The rules are tested against a double of torch.distributed (what it is
called with, in which order with the port's state); the sharing of the
server with torch's own init_process_group against the real torch, where
the interpreter has it."""
import io
import os
import socket
import subprocess
import sys
import textwrap
import threading
import types
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from procmgr import rendezvous  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class FakeDist:
    """torch.distributed and its rendezvous module, as far as open_store
    uses them."""

    def __init__(self, fail=None):
        self.stores, self.created, self.fail = [], [], fail
        self.dist = types.ModuleType("torch.distributed")
        self.dist.is_available = lambda: True
        fake = self

        class TCPStore:
            def __init__(self, *args, **kwargs):
                if fake.fail:
                    raise fake.fail
                fake.stores.append((args, kwargs))

        self.dist.TCPStore = TCPStore
        self.rdzv = types.ModuleType("torch.distributed.rendezvous")

        def create(hostname, port, rank, world_size, timeout, *a, **kw):
            # What torch's own store creation would find: is rank 0 there?
            fake.created.append((rank, listening(port)))
            return "store"

        self.rdzv._create_c10d_store = create

    def __enter__(self):
        self.saved = {k: sys.modules.get(k) for k in
                      ("torch.distributed", "torch.distributed.rendezvous")}
        sys.modules["torch.distributed"] = self.dist
        sys.modules["torch.distributed.rendezvous"] = self.rdzv
        rendezvous._state.update(store=None, wrapped=False)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        rendezvous._state.update(store=None, wrapped=False)


def env(rank, world=4, port=29500, **extra):
    e = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
         "WORLD_SIZE": str(world)}
    e.update(extra)
    return e


class Rules(unittest.TestCase):
    def test_nothing_without_torch_distributed(self):
        saved = sys.modules.pop("torch.distributed", None)
        try:
            self.assertIsNone(rendezvous.open_store(env(0)))
        finally:
            if saved is not None:
                sys.modules["torch.distributed"] = saved

    def test_nothing_for_one_rank_missing_variables_or_agent_store(self):
        with FakeDist() as f:
            self.assertIsNone(rendezvous.open_store(env(0, world=1)))
            for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
                e = env(0)
                del e[name]
                self.assertIsNone(rendezvous.open_store(e), name)
            self.assertIsNone(rendezvous.open_store(env(0, MASTER_PORT="x")))
            self.assertIsNone(rendezvous.open_store(
                env(0, TORCHELASTIC_USE_AGENT_STORE="True")))
            self.assertIsNone(rendezvous.open_store(env(0, PROCMGR_OPEN_STORE="0")))
            self.assertIsNone(rendezvous.open_store(env(1, PROCMGR_OPEN_STORE="0")))
            self.assertFalse(rendezvous._state["wrapped"])
            self.assertEqual(f.stores, [])

    def test_rank0_opens_a_shared_store_that_does_not_wait_once(self):
        with FakeDist() as f:
            self.assertEqual(rendezvous.open_store(env(0, world=8, port=4242)), "opened")
            self.assertEqual(rendezvous.open_store(env(0, world=8, port=4242)), "opened")
            self.assertEqual(len(f.stores), 1)
            args, kwargs = f.stores[0]
            self.assertEqual(args[:4], ("127.0.0.1", 4242, 8, True))
            self.assertIs(kwargs["multi_tenant"], True)
            self.assertIs(kwargs["wait_for_workers"], False)
            self.assertIs(kwargs["use_libuv"], True)
            rendezvous._state["store"] = None
            rendezvous.open_store(env(0, USE_LIBUV="0"))
            self.assertIs(f.stores[1][1]["use_libuv"], False)

    def test_rank0_port_taken_is_said_and_left_to_torch(self):
        with FakeDist(fail=RuntimeError("Address already in use")):
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertIsNone(rendezvous.open_store(env(0, port=4243)))
            self.assertIn("127.0.0.1:4243", err.getvalue())
            self.assertIn("Address already in use", err.getvalue())
            self.assertIsNone(rendezvous._state["store"])

    def test_other_rank_creates_its_store_only_once_rank0_listens(self):
        port = free_port()
        with FakeDist() as f:
            self.assertEqual(rendezvous.open_store(env(3, port=port)), "waits")
            srv = socket.socket()
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            opened = threading.Event()

            def rank0():
                srv.bind(("127.0.0.1", port))
                srv.listen(16)
                opened.set()

            timer = threading.Timer(0.3, rank0)
            timer.start()
            try:
                # torch's env:// handler calls the module's function by name.
                f.rdzv._create_c10d_store("127.0.0.1", port, 3, 4,
                                          __import__("datetime").timedelta(seconds=20))
            finally:
                timer.join()
                srv.close()
            self.assertTrue(opened.is_set())
            self.assertEqual(f.created, [(3, True)])

    def test_wrapped_once_and_rank0_and_agent_store_pass_through(self):
        port = free_port()
        with FakeDist() as f:
            rendezvous.open_store(env(1, port=port))
            first = f.rdzv._create_c10d_store
            rendezvous.open_store(env(2, port=port))
            self.assertIs(f.rdzv._create_c10d_store, first)
            td = __import__("datetime").timedelta(seconds=20)
            # Rank 0 hosts the store: nothing to wait for (nothing listens).
            f.rdzv._create_c10d_store("127.0.0.1", port, 0, 4, td)
            os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "True"
            try:
                f.rdzv._create_c10d_store("127.0.0.1", port, 1, 4, td)
            finally:
                del os.environ["TORCHELASTIC_USE_AGENT_STORE"]
            self.assertEqual(f.created, [(0, False), (1, False)])

    def test_gives_up_waiting_at_the_timeout(self):
        port = free_port()
        with FakeDist() as f:
            rendezvous.open_store(env(1, port=port))
            f.rdzv._create_c10d_store("127.0.0.1", port, 1, 2,
                                      __import__("datetime").timedelta(seconds=1))
            self.assertEqual(f.created, [(1, False)])


def torch_python():
    """An interpreter with torch.distributed, or None."""
    for py in ("/usr/bin/python3", sys.executable):
        if os.path.exists(py) and subprocess.run(
                [py, "-c", "import torch.distributed as d; assert d.is_available()"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


RANK = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    import torch, torch.distributed as dist, procmgr
    said = procmgr.open_store()
    print("said", said, flush=True)
    if os.environ["RANK"] == "0":
        sys.stdin.readline()   # the test lets rank 0 go on once rank 1 knocks
    dist.init_process_group("gloo", init_method="env://")
    t = torch.tensor([int(os.environ["RANK"]) + 1])
    dist.all_reduce(t)
    print("sum", int(t.item()), flush=True)
    dist.destroy_process_group()
""")


@unittest.skipIf(torch_python() is None, "no python with torch.distributed")
class RealTorch(unittest.TestCase):
    def test_init_process_group_shares_the_store_opened_ahead(self):
        py, port = torch_python(), free_port()
        pydir = os.path.join(os.path.dirname(__file__), "..", "..", "python")
        base = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                    WORLD_SIZE="2", USE_LIBUV="0", OMP_NUM_THREADS="1")
        base.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        r0 = subprocess.Popen([py, "-c", RANK, pydir], env=dict(base, RANK="0"),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        r1 = None
        try:
            self.assertEqual(r0.stdout.readline().split(), ["said", "opened"])
            # Rank 0's store listens although rank 0 is nowhere near
            # init_process_group yet.
            self.assertTrue(listening(port))
            r1 = subprocess.Popen([py, "-c", RANK, pydir], env=dict(base, RANK="1"),
                                  stdout=subprocess.PIPE, text=True)
            self.assertEqual(r1.stdout.readline().split(), ["said", "waits"])
            r0.stdin.write("go\n")
            r0.stdin.flush()
            # torch's own store on rank 0 took the same port: it shared the
            # server (a second bind would have failed), and the ranks met.
            out0, _ = r0.communicate(timeout=120)
            out1, _ = r1.communicate(timeout=120)
            self.assertEqual(r0.returncode, 0)
            self.assertEqual(r1.returncode, 0)
            self.assertIn("sum 3", out0)
            self.assertIn("sum 3", out1)
        finally:
            for p in (r0, r1):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait()


if __name__ == "__main__":
    unittest.main()

"""procmgr.open_store: the other ranks' connection to rank 0's store made
only once it listens; on rank 0 nothing is opened (issue 32: torch's store
server listens on every address and takes no credential, so one opened
ahead by procmgr was another user's to read and write).

The rules are tested against a double of torch.distributed (what it is
called with, in which order with the port's state); against the real
torch, where the interpreter has it, that the ranks still meet and that
another user finds nothing listening on rank 0's port before its
init_process_group."""
import io
import os
import shutil
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
        rendezvous._state.update(wrapped=False)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        rendezvous._state.update(wrapped=False)


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

    def test_rank0_opens_nothing(self):
        # Whatever the world, port, torch's server kind, or how often it is
        # called: no store, nothing listening, nothing said.
        port = free_port()
        with FakeDist() as f:
            for extra in ({}, {"USE_LIBUV": "0"}, {"USE_LIBUV": "1"}):
                for world in (2, 8, 1024):
                    err = io.StringIO()
                    with redirect_stderr(err):
                        for _ in range(2):
                            self.assertIsNone(rendezvous.open_store(
                                env(0, world=world, port=port, **extra)))
                    self.assertEqual(err.getvalue(), "")
            self.assertEqual(f.stores, [])
            self.assertFalse(listening(port))
            self.assertFalse(rendezvous._state["wrapped"])
        with FakeDist(fail=RuntimeError("Address already in use")) as f:
            self.assertIsNone(rendezvous.open_store(env(0, port=port)))

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

# Another user's try at rank 0's store: a plain connection to the port on
# each address given, then torch's own client setting and reading a key at
# the first. Prints what it got.
INTRUDER = textwrap.dedent("""
    import datetime, socket, sys
    port, addrs = int(sys.argv[1]), sys.argv[2:]
    for a in addrs:
        fam = socket.AF_INET6 if ":" in a else socket.AF_INET
        with socket.socket(fam) as s:
            s.settimeout(2)
            print("connect", a, "refused" if s.connect_ex((a, port)) else "accepted", flush=True)
    import torch.distributed as dist
    try:
        c = dist.TCPStore(addrs[0], port, 2, False, datetime.timedelta(seconds=2))
        c.set("intruder", "x")
        print("store set", c.get("intruder").decode(), flush=True)
    except Exception as e:
        print("store refused", type(e).__name__, flush=True)
""")


def node_addresses():
    """Every address of this node a peer could use: loopback and each
    interface's."""
    addrs = ["127.0.0.1"]
    out = subprocess.run(["hostname", "-I"], stdout=subprocess.PIPE, text=True).stdout.split()
    addrs += [a for a in out if ":" not in a]
    if socket.has_ipv6:
        addrs.append("::1")
    return addrs


@unittest.skipIf(torch_python() is None, "no python with torch.distributed")
class RealTorch(unittest.TestCase):
    def test_ranks_meet_and_rank0_opens_nothing_ahead_for_another_user(self):
        py, port = torch_python(), free_port()
        pydir = os.path.join(os.path.dirname(__file__), "..", "..", "python")
        base = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                    WORLD_SIZE="2", USE_LIBUV="0", OMP_NUM_THREADS="1")
        base.pop("TORCHELASTIC_USE_AGENT_STORE", None)
        r0 = subprocess.Popen([py, "-c", RANK, pydir], env=dict(base, RANK="0"),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        r1 = None
        try:
            said = r0.stdout.readline().split()
            # Rank 0 is past open_store, not yet in init_process_group:
            # nothing of procmgr's listens for anyone, on any address.
            if os.geteuid() == 0 and shutil.which("runuser"):
                got = subprocess.run(
                    ["runuser", "-u", "nobody", "--", py, "-c", INTRUDER, str(port)]
                    + node_addresses(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    text=True, timeout=120, cwd="/").stdout
                lines = got.splitlines()
                self.assertEqual([l for l in lines if l.startswith("connect")],
                                 ["connect %s refused" % a for a in node_addresses()], got)
                self.assertEqual([l.split()[:2] for l in lines if l.startswith("store")],
                                 [["store", "refused"]], got)
            self.assertFalse(listening(port))
            self.assertEqual(said, ["said", "None"])
            r1 = subprocess.Popen([py, "-c", RANK, pydir], env=dict(base, RANK="1"),
                                  stdout=subprocess.PIPE, text=True)
            self.assertEqual(r1.stdout.readline().split(), ["said", "waits"])
            r0.stdin.write("go\n")
            r0.stdin.flush()
            # Rank 1 waited for rank 0's own store (torch's), and the ranks met.
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

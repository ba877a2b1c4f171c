"""examples/ddp_train.py's end-of-run check, with real torch (gloo, two
processes, outside procmgr: the module's calls are no-ops there).

At --width 2048 and the old fixed --lr 0.05 SGD diverged (the loss reached
1e79 by step 30 and NaN before step 150), and the replica check, NaN equal
to nothing, said "replicas differ" (exit 3): a diverged run is said as such,
and the default learning rate is scaled down for wide models."""
import os
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from test_rendezvous import torch_python  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ddp_train.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Runs the example as `python example.py` would (its own directory first on
# sys.path), then says whether it left with its process group alive: gloo's
# destructors then run at interpreter shutdown, where under load one aborted
# (exit -6 instead of the example's own code).
WRAP = """
import os, runpy, sys
path = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(path))
try:
    runpy.run_path(path, run_name="__main__")
finally:
    import torch.distributed as dist
    if dist.is_initialized():
        print("the process group is alive at exit", flush=True)
"""


def run_ddp(*args):
    """Two ranks of the example; (rank 0's exit code, its output)."""
    py, port = torch_python(), free_port()
    with tempfile.TemporaryDirectory() as d:
        procs = []
        for r in (0, 1):
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       WORLD_SIZE="2", RANK=str(r), LOCAL_RANK=str(r), USE_LIBUV="0",
                       OMP_NUM_THREADS="1", PROCMGR_OPEN_STORE="0")
            for k in [k for k in env if k.startswith(("PROCMGR_", "SLURM_"))]:
                if k != "PROCMGR_OPEN_STORE":
                    del env[k]
            procs.append(subprocess.Popen(
                [py, "-c", WRAP, EXAMPLE, "--ckpt-dir", os.path.join(d, "ckpt%d" % r),
                 "--state-every", "0", "--batch", "512"] + list(args),
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        try:
            outs = [p.communicate(timeout=240)[0] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        return procs[0].returncode, outs[0]


@unittest.skipIf(torch_python() is None, "no python with torch.distributed")
class WideModel(unittest.TestCase):
    def test_a_diverged_run_is_said_so(self):
        rc, out = run_ddp("--width", "2048", "--lr", "50", "--steps", "40")
        self.assertEqual(rc, 4, out)
        self.assertIn("training diverged", out)
        self.assertIn("lower --lr", out)
        self.assertNotIn("replicas differ", out)
        self.assertNotIn("the process group is alive at exit", out)

    def test_the_default_rate_trains_a_wide_model(self):
        rc, out = run_ddp("--width", "2048", "--steps", "40")
        self.assertEqual(rc, 0, out)
        loss = float(out.split("final loss: ")[1].split()[0])
        self.assertLess(loss, 10.0, out)
        self.assertNotIn("the process group is alive at exit", out)


if __name__ == "__main__":
    unittest.main()

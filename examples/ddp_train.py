#!/usr/bin/python3
"""A small PyTorch DDP training run under procmgr, written as for torchrun.

One process per rank, started by `srun --procmgr...` (see train.sbatch):
procmgr gives each rank torchrun's environment (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT, ...), so
`init_process_group("env://")` needs nothing else. When any rank fails,
procmgr stops every rank and starts them all again; this script then
resumes from its newest checkpoint, and the run ends exactly where an
uninterrupted one would: same final loss, to the last bit.

- gloo on CPU, NCCL when CUDA is available;
- a tiny model on synthetic data, every batch a function of (step, rank)
  alone, so that a resumed run sees the same batches as an unbroken one;
- rank 0 writes a checkpoint every --ckpt-every steps, atomically (a
  temporary file, fsync, rename): a rank killed in the middle leaves no
  half checkpoint behind;
- under procmgr, every rank also hands its state to procmgr every
  --state-every steps (default 1: every step; procmgr.save_torch, a memory
  file procmgrd keeps, about a memcpy), alternating between two names so
  that the ranks can always agree on a step all of them hold: after a
  restart they resume from procmgr's copy when it is newer than the disk's,
  losing at most the step in progress (0: disk checkpoints only);
- a heartbeat once per step through the procmgr Python module
  (procmgr.heartbeat(step, compute=...): procmgr's hang detector with
  --procmgr-hang-timeout, and its recovery figure: every rank's first
  heartbeat after a restart is "training again"; a no-op elsewhere);
- with it, the time the last step spent computing, outside the gradient
  collective (--no-compute-time: not): the slow-node detector's evidence
  (--procmgr-slow). In a synchronous job every rank's step lasts as long as
  the slowest's, so the step time says nothing; the time a rank computes
  does. Measured as the step's wall time less the time between the comm
  hook's call (backward reached the collective) and its result (every
  rank's gradients in): see Collective;
- after a restart torch's 1 s retry of a refused connection to rank 0's
  store is not paid: procmgr.ready() makes the other ranks'
  init_process_group wait until rank 0's store listens
  (procmgr.open_store, nothing to write; --wait-store: the program also
  polls the port itself first, procmgr.wait_store(), the earlier remedy);
- rank 0 prints "final loss: X" at the end;
- with --timings FILE, each rank appends one JSON line per start (when
  the process started, imports done, checkpoint loaded, rendezvous begun
  and done, first step): bench/recovery's breakdown;
- with --step-log FILE, every rank appends {"pid", "rank", "node", "t"}
  once it is a rank (after procmgr.ready()), and rank 0 appends {"step",
  "t"} per completed step: bench/goodput's external measure (which
  process to fault, how many distinct steps were done when).

For tests, CRASH_RANK=R CRASH_STEP=S CRASH_MARKER=FILE make rank R exit(1)
at step S, once: the marker file says it has happened (CRASH_HOW=kill: a
SIGKILL of itself instead). With CRASH_HOW=wait
it stands still there instead, for the test to crash its whole node.
HOLD_STEP="S [S...]" HOLD_GO=FILE make every rank wait at step S,
heartbeating, until FILE.S exists (a test's moment to act on ranks that
are alive).
"""
import time

T_MAIN = time.time()  # before the imports: what they cost is measured

import argparse
import datetime
import glob
import io
import json
import math
import os
import signal
import sys

try:
    import procmgr
except ImportError:  # run from procmgr's source tree, not installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "python"))
    import procmgr

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

SEED = 1234
FEATURES = 8


def log(msg):
    print(f"[rank {os.environ.get('RANK', '?')} gen "
          f"{os.environ.get('TORCHELASTIC_RESTART_COUNT', '?')}] {msg}", flush=True)


def model_for(device, width=16):
    torch.manual_seed(SEED)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, width), torch.nn.Tanh(), torch.nn.Linear(width, 1)
    ).to(device=device, dtype=torch.float64)


# The target the model learns: fixed, from the seed.
def true_weights():
    g = torch.Generator().manual_seed(SEED + 1)
    return torch.randn(FEATURES, 1, generator=g, dtype=torch.float64)


def batch(step, rank, size, device):
    """The batch of this rank at this step, the same in every run."""
    g = torch.Generator().manual_seed(SEED + 1_000_003 * (step + 1) + rank)
    x = torch.randn(size, FEATURES, generator=g, dtype=torch.float64)
    y = torch.sin(x @ true_weights())
    return x.to(device), y.to(device)


def newest_checkpoint(ckpt_dir):
    # Only whole ones: a temporary file is not a checkpoint.
    found = sorted(glob.glob(os.path.join(ckpt_dir, "step-*.pt")))
    return found[-1] if found else None


def save_checkpoint(ckpt_dir, step, model, opt, keep=2):
    path = os.path.join(ckpt_dir, f"step-{step:08d}.pt")
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        torch.save({"step": step, "model": model.state_dict(),
                    "opt": opt.state_dict()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dfd = os.open(ckpt_dir, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    for old in sorted(glob.glob(os.path.join(ckpt_dir, "step-*.pt")))[:-keep]:
        os.unlink(old)


class Collective:
    """Time blocked in the gradient collective during one step.

    DDP calls the comm hook when backward has produced a bucket's
    gradients, and waits for the future it returns at the end of backward:
    from the first call to the last result, this rank was waiting for the
    others (and the network). For a model with one bucket that is all its
    waiting; with many buckets, backward's compute of the later buckets
    overlaps it, so step time less this is a lower bound on compute, which
    is still the same bound on every rank."""
    first = None
    last = None

    @classmethod
    def reset(cls):
        cls.first = cls.last = None

    @classmethod
    def called(cls):
        if cls.first is None:
            cls.first = time.perf_counter()

    @classmethod
    def done(cls):
        cls.last = time.perf_counter()

    @classmethod
    def blocked(cls):
        if cls.first is None or cls.last is None:
            return 0.0
        return max(0.0, cls.last - cls.first)
def state_name(step):
    # Two slots: a rank stopped while saving step N still holds N-1, and
    # a rank ahead of it holds N-1 too (steps are in lockstep).
    return f"train.{step % 2}"


def procmgr_steps():
    """The steps this rank holds in procmgr ({step: name}), {} without."""
    return {v["step"]: n for n, v in procmgr.saved().items() if n.startswith("train.")}


def ordered_mean(group, bucket):
    """DDP's gradient average, summed in rank order on every rank.

    A ring all-reduce sums each element in an order that depends on where
    it lies in DDP's bucket, and DDP lays its buckets out anew after the
    first iteration: a run resumed from a checkpoint would differ from an
    unbroken one in the last bits. Gathering every rank's gradients and
    adding them in rank order gives the same bits whatever the layout.
    (World size times the gradients in memory: for small models.)"""
    group = group if group is not None else dist.group.WORLD
    world = dist.get_world_size(group)
    grads = bucket.buffer()
    Collective.called()
    parts = [torch.empty_like(grads) for _ in range(world)]
    fut = dist.all_gather(parts, grads, group=group, async_op=True).get_future()

    def mean(f):
        # A peer gone mid-gather fails the future: raise it here, or parts
        # (torch.empty) would be averaged as if they were gradients.
        f.value()
        Collective.done()
        acc = parts[0].clone()
        for p in parts[1:]:
            acc += p
        return acc.div_(world)
    return fut.then(mean)


def process_start():
    """When this process started (epoch s, to the clock tick), from /proc:
    the interpreter's own start-up comes before any line of this script.
    Its age against the uptime, not /proc/stat's btime (whole seconds)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            now, up = time.time(), float(f.read().split()[0])
        return now - (up - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def record(path, what):
    """One JSON line, appended whole (O_APPEND, one write)."""
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(what) + "\n").encode())
        finally:
            os.close(fd)


def maybe_hold(step):
    """HOLD_STEP="S [S...]" HOLD_GO=FILE: every rank waits at step S until
    FILE.S exists, heartbeating (alive: not a hang); once (FILE.S there: no
    wait)."""
    base = os.environ.get("HOLD_GO")
    if not base or str(step) not in os.environ.get("HOLD_STEP", "").split():
        return
    go = "%s.%d" % (base, step)
    beat = 0.0
    while not os.path.exists(go):
        if time.monotonic() - beat >= 1.0:
            procmgr.heartbeat(step)
            beat = time.monotonic()
        time.sleep(0.01)


def maybe_crash(step, rank, timings):
    marker = os.environ.get("CRASH_MARKER")
    if (marker and str(rank) == os.environ.get("CRASH_RANK")
            and str(step) == os.environ.get("CRASH_STEP")
            and not os.path.exists(marker)):
        open(marker, "w").close()
        go = os.environ.get("CRASH_GO")
        while go and not os.path.exists(go):
            # The test says when (tests/integration/warm.bats: once every
            # rank's standby waits).
            time.sleep(0.01)
        if os.environ.get("CRASH_HOW") == "wait":
            # Stands still for its whole node to be crashed from outside
            # (tests/integration/spares.bats): the others block in the
            # next all-reduce, as with a machine that died mid-step.
            log(f"waiting at step {step} for its node to crash (CRASH_HOW=wait)")
            while True:
                time.sleep(60)
        log(f"crashing at step {step} (CRASH_STEP)")
        record(timings, {"event": "crash", "rank": rank, "step": step, "t": time.time()})
        if os.environ.get("CRASH_HOW") == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        # At once, as a real crash: no clean shutdown of the process group.
        os._exit(1)


def leave(code):
    """Exit with CODE, the process group destroyed first, by every rank
    together. A process that exits with it alive runs gloo's destructors at
    interpreter shutdown, where under load one aborted ("terminate called
    without an active exception", exit -6 instead of CODE). The barrier
    first: a rank that tears its connections down while a peer's last
    collective is still in flight left that peer hung at its exit (once in
    CI, the step held until srun's timeout)."""
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    sys.exit(code)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--ckpt-dir", required=True)
    ap.add_argument("--ckpt-every", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=None,
                    help="SGD's learning rate (default 0.05, scaled down as 1024/width "
                         "above width 1024: at 0.05 a width of 2048 diverges)")
    ap.add_argument("--timings", metavar="FILE",
                    help="append when each start-up phase ended (JSON lines)")
    ap.add_argument("--step-log", metavar="FILE",
                    help="append each rank's pid once, and rank 0's completed steps "
                         "(JSON lines, time.time())")
    ap.add_argument("--state-every", type=int, default=1, metavar="N",
                    help="hand the state to procmgr every N steps (0: never)")
    ap.add_argument("--wait-store", action="store_true",
                    help="poll rank 0's store before init_process_group (procmgr.wait_store())")
    ap.add_argument("--width", type=int, default=16,
                    help="the hidden layer's width (more compute per step)")
    ap.add_argument("--no-compute-time", action="store_true",
                    help="heartbeat with the step only (procmgr's slow-node detector "
                         "then judges by the heartbeats' phase)")
    args = ap.parse_args()
    if args.lr is None:
        args.lr = 0.05 * min(1.0, 1024 / args.width)
    t = {"event": "start", "exec": process_start(), "main": T_MAIN, "imported": time.time()}
    # The program's expensive start-up is done: with warm generations a
    # process started ahead of time waits here for its generation.
    procmgr.ready()

    rank = int(os.environ["RANK"])
    record(args.step_log, {"pid": os.getpid(), "rank": rank, "t": time.time(),
                           "node": os.environ.get("SLURMD_NODENAME")})
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.ckpt_dir, exist_ok=True)

    model = model_for(device, args.width)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    start = 0
    # Before the first collective: no rank can reach the next checkpoint
    # while another is still choosing which one to load.
    ckpt = newest_checkpoint(args.ckpt_dir)
    if ckpt:
        state = torch.load(ckpt, map_location=device)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        del state
    held = procmgr_steps() if args.state_every else {}
    t["ckpt_loaded"] = time.time()

    if args.wait_store:
        procmgr.wait_store()
    t["rdzv_start"] = time.time()
    dist.init_process_group("nccl" if cuda else "gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=60))
    t["rdzv_end"] = time.time()
    world = dist.get_world_size()
    # procmgr's copy: the newest step every rank holds, if newer than the
    # disk's. A rank without any (a spare's, a first start) says 0.
    how = os.path.basename(ckpt) if ckpt else None
    if args.state_every:
        newest = max(held) if held else 0
        s = torch.tensor([newest], dtype=torch.int64, device=device)
        dist.all_reduce(s, op=dist.ReduceOp.MIN)
        agreed = s.item()
        if agreed > start and agreed in held:
            t0 = time.time()
            view, info = procmgr.load_info(held[agreed])
            state = torch.load(io.BytesIO(view), map_location=device)
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            start = state["step"]
            del state, view
            how = (f"procmgr's copy, version {info['version']}, {info['age_ms']} ms old, "
                   f"loaded in {(time.time() - t0) * 1000:.1f} ms")
    # Every rank must resume from the same step (a shared directory).
    s = torch.tensor([start, -start], dtype=torch.int64, device=device)
    dist.all_reduce(s, op=dist.ReduceOp.MAX)
    if s[0].item() != start or -s[1].item() != start:
        log(f"ranks disagree on the checkpoint to resume from ({ckpt})")
        leave(2)
    if start:
        log(f"resumed from step {start} ({how})")

    ddp = DDP(model, device_ids=[local_rank] if cuda else None)
    ddp.register_comm_hook(None, ordered_mean)
    loss_fn = torch.nn.MSELoss()
    compute = None  # the last step's, in seconds
    for step in range(start, args.steps):
        procmgr.heartbeat(step, compute=None if args.no_compute_time else compute)
        t_step = time.perf_counter()
        Collective.reset()
        if step == start:
            t.update(first_step=time.time(), rank=rank, gen=procmgr.restart_count(),
                     step=step, pid=os.getpid())
            record(args.timings, t)
        maybe_hold(step)
        maybe_crash(step, rank, args.timings)
        x, y = batch(step, rank, args.batch, device)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()
        compute = time.perf_counter() - t_step - Collective.blocked()
        done = step + 1
        if rank == 0:
            record(args.step_log, {"step": done, "t": time.time()})
        if args.state_every and done % args.state_every == 0 and done < args.steps:
            try:
                procmgr.save_torch(state_name(done), {"step": done, "model": model.state_dict(),
                                                      "opt": opt.state_dict()}, step=done)
            except procmgr.StateError as e:
                # Over the site's limit: training goes on, on the disk's
                # checkpoints alone.
                log(f"procmgr refused the state: {e}; disk checkpoints only from now on")
                args.state_every = 0
        if done % args.ckpt_every == 0 and done < args.steps and rank == 0:
            save_checkpoint(args.ckpt_dir, done, model, opt)

    # The loss of the final model on a held-out batch, the same on every
    # rank (DDP keeps the replicas equal), checked.
    x, y = batch(-1, 10_000, 256, device)
    with torch.no_grad():
        final = loss_fn(model(x), y).detach()
    # Equal iff the highest and the lowest are (a sum compared with
    # world * final would differ in float32's last bit for some losses).
    hi, lo = final.clone(), final.clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    # Every rank holds hi and lo, so every rank reaches the same verdict and
    # leaves together (leave's barrier); rank 0 says it.
    code = 0
    if not (math.isfinite(hi.item()) and math.isfinite(lo.item())):
        # NaN equals nothing, itself included: a diverged run is said as
        # such, not as replicas that differ.
        code = 4
        msg = (f"training diverged: the final loss is {lo.item()!r} to {hi.item()!r} "
               f"(--width {args.width} at --lr {args.lr}: lower --lr)")
    elif hi.item() != lo.item():
        code = 3
        msg = f"replicas differ: {lo.item()!r} to {hi.item()!r}"
    if rank == 0:
        if code:
            log(msg)
        else:
            print(f"final loss: {final.item()!r} after {args.steps} steps, "
                  f"{world} ranks, generation "
                  f"{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}", flush=True)
    leave(code)


if __name__ == "__main__":
    main()

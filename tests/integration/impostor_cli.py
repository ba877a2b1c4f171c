#!/usr/bin/python3
"""An ordinary user's impostor for the procmgr command (issue 20, item 8):
after a step's root moved away from node 0, it holds node 0's control port
(the command asks node 0 first) and serves each request it gets:

- the first one is relayed to the real root (HOST), whose answer comes
  back with every rank 'failed' and every node named FORGED (or, if the
  root refused it, with a node named FORGED of its own);
- the second is only kept (DIR/cred.2, for a replay), not even decoded,
  and answered with a node named FORGED;
- any later one likewise, or for stop with "stopping every rank (FORGED)".
Every credential goes to DIR/cred.N, the log to DIR/imp.log.

Each answer starts with a WELCOME carrying the impostor's own munge
credential for the request's nonce and target (copied from the request,
which it decodes), so that only the credential's user gives it away.

    impostor_cli.py ADDR PORT HOST MUNGE_SOCKET DIR

A kept credential replayed to a root: the first frame it answers, as
"TYPE TEXT" (7: refused, 6: welcome, 24: the end of an answer).

    impostor_cli.py --send HOST PORT CREDFILE
"""
import os, re, socket, struct, subprocess, sys

WELCOME, REFUSED, CLIENT, ANSWER, ANSWER_END = 6, 7, 21, 23, 24


def frame(mtype, text=b"", gen=0, status=0, count=0, node=0, rank=-1):
    payload = struct.pack(">IiiiIH", gen, rank, node, status, count, len(text)) + text
    return struct.pack(">HBBI", 0x504D, 1, mtype, len(payload)) + payload


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_frame(conn):
    head = recv_exact(conn, 8)
    body = head and recv_exact(conn, struct.unpack(">I", head[4:8])[0])
    if not body:
        return None
    gen, rank, node, status, count, tlen = struct.unpack(">IiiiIH", body[:22])
    return head[3], gen, rank, node, status, count, body[22:22 + tlen], head + body


def relay(raw):
    """The request to the real root; its frames back, as they came."""
    frames = []
    with socket.create_connection((real, port), timeout=10) as c:
        c.sendall(raw)
        while True:
            f = read_frame(c)
            if f is None:
                break
            frames.append(f)
            log.write("root said %d: %s\n" % (f[0], f[6][:200].decode(errors="replace").replace("\n", "|")))
            if f[0] in (REFUSED, ANSWER_END):
                break
    return frames


def decode(cred):
    # After the real root decoded it, munged says "replayed" (one munged for
    # every node of the testbed) but still gives the payload.
    return subprocess.run(["unmunge", "-S", sock_path, "-m", "/dev/null"], input=cred,
                          capture_output=True).stdout.decode()


def forge(job, step, to, nonce):
    proof = "procmgr-root v1 job=%s step=%s to=%s nonce=%s" % (job, step, to, nonce)
    return frame(WELCOME, subprocess.run(["munge", "-S", sock_path, "-n", "-s", proof],
                                         capture_output=True).stdout.strip())


def serve(conn, n):
    f = read_frame(conn)
    if f is None or f[0] != CLIENT:
        return
    cred = f[6]
    with open(os.path.join(out, "cred.%d" % n), "wb") as w:
        w.write(cred)
    if n == 2:
        # Kept for a replay: not decoded here, where the testbed's one
        # munged would remember it. A status answer of its own.
        log.write("request 2: kept\n")
        conn.sendall(forge(0, 0, "x:1", "0" * 32) +
                     frame(ANSWER, b"node id=0 name=FORGED phase=running gen=7 ranks=0 health=ok\n") +
                     frame(ANSWER_END, count=1))
        return
    frames = relay(f[7]) if n == 1 else []
    payload = decode(cred)
    log.write("request %d: %s\n" % (n, payload))
    m = re.match(r"procmgr-client v\d (\w+) job=(\d+) step=(\d+)(?: to=(\S+) nonce=(\S+))?", payload)
    if not m:
        return
    kind, job, step, to, nonce = m.groups()
    reply = forge(job, step, to, nonce) if nonce else b""
    for t, gen, rank, node, status, count, text, raw in frames:
        if t == ANSWER:
            text = text.replace(b"state=running", b"state=failed")
            text = re.sub(rb"name=\S+", b"name=FORGED", text)
            reply += frame(ANSWER, text, gen, status, count, node, rank)
        elif t == ANSWER_END:
            reply += frame(ANSWER_END, text, gen, status, count, node, rank)
    answered = any(f[0] == ANSWER_END for f in frames)
    if not answered and kind == "stop":
        reply += frame(ANSWER_END, b"procmgr: step %s.%s: stopping every rank (FORGED)" %
                       (job.encode(), step.encode()))
    elif not answered:
        reply += frame(ANSWER, b"node id=0 name=FORGED phase=running gen=7 ranks=0 health=ok\n")
        reply += frame(ANSWER_END, count=1)
    conn.sendall(reply)
    log.write("answered request %d\n" % n)


if sys.argv[1] == "--send":
    with socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=10) as c:
        c.sendall(frame(CLIENT, open(sys.argv[4], "rb").read()))
        f = read_frame(c)
        print("closed" if f is None else "%d %s" % (f[0], f[6].decode(errors="replace")))
    sys.exit(0)

addr, port, real, sock_path, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
log = open(os.path.join(out, "imp.log"), "a", buffering=1)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port))
s.listen(16)
log.write("listening\n")
n = 0
while True:
    conn, _ = s.accept()
    n += 1
    conn.settimeout(15)
    try:
        serve(conn, n)
    except OSError as e:
        log.write("error %s\n" % e)
    conn.close()

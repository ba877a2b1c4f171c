#!/usr/bin/python3
"""An ordinary user's impostor on the control tree: listens on every port
Slurm may reserve for a step, on one node's address, before the step
starts, and answers each HELLO as a parent would: a WELCOME with a munge
credential of its own (it decodes the child's HELLO to copy the nonce),
then START and an ABORT whose text must never reach anyone.

    impostor.py ADDR LO HI MUNGE_SOCKET LOG
"""
import os, selectors, socket, struct, subprocess, sys

addr, lo, hi, sock_path, logf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
log = open(logf, "a", buffering=1)


def frame(mtype, text=b"", gen=0):
    payload = struct.pack(">IiiiIH", gen, -1, 0, 1, 0, len(text)) + text
    return struct.pack(">HBBI", 0x504D, 1, mtype, len(payload)) + payload


def answer(conn):
    data = b""
    while len(data) < 8 or len(data) < 8 + struct.unpack(">I", data[4:8])[0]:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    node = struct.unpack(">i", data[16:20])[0]
    cred = data[30:8 + struct.unpack(">I", data[4:8])[0]]
    log.write("hello from node %d\n" % node)
    out = subprocess.run(["unmunge", "-S", sock_path, "-m", "/dev/null"], input=cred,
                         capture_output=True).stdout.decode()
    forged = out.replace(" hello ", " welcome ").replace("from=%d to=0" % node,
                                                          "from=0 to=%d" % node)
    mine = subprocess.run(["munge", "-S", sock_path, "-n", "-s", forged],
                          capture_output=True).stdout.strip()
    conn.sendall(frame(6, mine) + frame(9) + frame(11, b"FORGED by the impostor"))
    log.write("answered node %d\n" % node)


sel = selectors.DefaultSelector()
for port in range(lo, hi + 1):
    s = socket.socket()
    try:
        s.bind((addr, port))
    except OSError:
        s.close()
        continue
    s.listen(16)
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
log.write("listening\n")
while True:
    for key, _ in sel.select():
        conn, _ = key.fileobj.accept()
        conn.setblocking(True)
        conn.settimeout(5)
        try:
            answer(conn)
        except OSError as e:
            log.write("error %s\n" % e)
        conn.close()

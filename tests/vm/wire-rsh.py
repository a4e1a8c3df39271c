#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The remote shell of the fabric test's MPI launcher (tests/vm/fabric.sh):
Open MPI's runtime (PRRTE) starts its daemon on the other guests through
an ssh-like agent, and the test guests have no ssh.

    wire-rsh.py serve ADDR       in every guest: listen on ADDR:13500
    wire-rsh.py [-OPT...] HOST COMMAND...
                                 as ssh would: COMMAND's words joined by
                                 spaces, run by bash on HOST, its output
                                 here, its exit status ours (255 if the
                                 connection broke first)

No authentication and no encryption: it listens only on the test wire's
private address, between the throwaway VMs of one test run on loopback
sockets, as root, like everything those guests do.  A command ends with
its connection: the client going away (PRRTE stops its agents at the end
of a job) kills the command's process group.

The protocol: the client sends the command as one line; the server
answers with frames of a type byte, a 4-byte big-endian length and that
many bytes: b'o' output (stdout and stderr together), b'x' the exit status
(4-byte signed) as the last frame.
"""

import os
import signal
import socket
import struct
import subprocess
import sys
import threading

PORT = 13500
LINE_MAX = 1 << 20
CONNECT_TIMEOUT = 30


def _frame(kind, data):
    return kind + struct.pack('>I', len(data)) + data


def _run(conn):
    """One command, for one connection, in a child of the server."""
    buf = b''
    while b'\n' not in buf:
        data = conn.recv(65536)
        if not data or len(buf) > LINE_MAX:
            return
        buf += data
    command = buf.split(b'\n', 1)[0].decode('utf-8', 'replace')
    proc = subprocess.Popen(['/bin/bash', '-c', command], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)

    def watch():
        # The client never sends more: end of file means it went away.
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    threading.Thread(target=watch, daemon=True).start()
    try:
        for data in iter(lambda: proc.stdout.read1(65536), b''):
            conn.sendall(_frame(b'o', data))
    except OSError:
        pass
    status = proc.wait()
    try:
        conn.sendall(_frame(b'x', struct.pack('>i', status)))
    except OSError:
        pass


def serve(addr):
    srv = socket.create_server((addr, PORT))
    # Children reaped by the kernel; each resets it for its own subprocess.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    print(f'wire-rsh: serving on {addr}:{PORT}', flush=True)
    while True:
        conn, _ = srv.accept()
        if os.fork() == 0:
            srv.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                _run(conn)
            finally:
                os._exit(0)
        conn.close()


def _recv_exact(conn, size):
    data = b''
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def client(host, words):
    try:
        conn = socket.create_connection((host, PORT), timeout=CONNECT_TIMEOUT)
    except OSError as exc:
        print(f'wire-rsh: {host}: {exc}', file=sys.stderr)
        return 255
    conn.settimeout(None)
    conn.sendall(' '.join(words).encode() + b'\n')
    out = sys.stdout.buffer
    while True:
        head = _recv_exact(conn, 5)
        if head is None:
            print(f'wire-rsh: {host}: connection closed', file=sys.stderr)
            return 255
        kind, size = head[:1], struct.unpack('>I', head[1:])[0]
        data = _recv_exact(conn, size)
        if data is None:
            return 255
        if kind == b'x':
            status = struct.unpack('>i', data)[0]
            return status if status >= 0 else 128 - status
        out.write(data)
        out.flush()


def main(argv):
    if len(argv) == 3 and argv[1] == 'serve':
        serve(argv[2])
        return 0
    # ssh's options (PRRTE may pass some) mean nothing here.
    args = argv[1:]
    while args and args[0].startswith('-'):
        args.pop(0)
    if len(args) < 2:
        print('usage: wire-rsh.py serve ADDR | wire-rsh.py HOST COMMAND...',
              file=sys.stderr)
        return 2
    return client(args[0], args[1:])


if __name__ == '__main__':
    sys.exit(main(sys.argv))

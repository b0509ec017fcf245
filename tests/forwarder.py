"""A stand-in for ``ssh -L``: another machine's loopback, joined to ours only through forwarded TCP ports.

    python tests/forwarder.py --forward PORT [--forward PORT ...] -- COMMAND [ARG ...]

Two processes. The *far side* (a child) enters a network namespace of its own (tests/netns.py: its own loopback,
nothing else), listens on ``127.0.0.1:PORT`` there for each ``--forward``, and starts COMMAND in it (the user's
Chrome on "the laptop"). Each connection it accepts is handed, as a file descriptor over a Unix socket pair, to the
*near side* (this process, in the caller's namespace: "the dev box"), which connects to ``127.0.0.1:PORT`` here and
copies bytes both ways, as sshd does for ``-L`` (the connection reaches the server from a process of the user's
own uid). A line ``reverse PORT`` on stdin opens the other direction for the test's own instruments (the browser's
DevTools port): the near side listens on a free port here and prints ``reverse PORT LOCAL``; each connection to it
gets a socket connected to ``127.0.0.1:PORT`` on the far side. Prints ``ready FAR_PID COMMAND_PID`` once listening.
Stdlib only; ends when stdin closes (and ends COMMAND).
"""

from __future__ import annotations

import array
import os
import signal
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns  # a sibling script (tests/netns.py), importable as the forwarder runs as a script


def send_fd(chan: socket.socket, tag: bytes, fd: int) -> None:
    chan.sendmsg([tag], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])


def recv_fd(chan: socket.socket) -> tuple[bytes, int]:
    fds = array.array("i")
    msg, anc, _flags, _addr = chan.recvmsg(64, socket.CMSG_SPACE(fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:fds.itemsize])
    if not msg:
        raise EOFError("the far side ended")
    return msg, (fds[0] if fds else -1)  # -1: a refused connect (b"x")


def far_side(chan: socket.socket, ports: list[int], command: list[str], ready_w: int) -> None:
    """In a namespace of its own: listen on the forwarded ports, run the command, hand over each connection; on a
    request (``c<port>``) connect to a local port and hand that socket over."""
    netns.enter_private_netns()
    listeners = {}
    for port in ports:
        s = socket.create_server(("127.0.0.1", port))
        listeners[s.fileno()] = (s, port)
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True) if command else None
    os.write(ready_w, f"ready {os.getpid()} {proc.pid if proc else 0}\n".encode())
    os.close(ready_w)

    def accept(s: socket.socket, port: int) -> None:
        while True:
            conn, _ = s.accept()
            send_fd(chan, b"a%d" % port, conn.fileno())
            conn.close()

    for s, port in listeners.values():
        threading.Thread(target=accept, args=(s, port), daemon=True).start()
    try:
        while True:
            msg = chan.recv(64)
            if not msg:
                break
            port = int(msg[1:])
            try:
                out = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                chan.send(b"x")
                continue
            out.settimeout(None)  # blocking again: O_NONBLOCK belongs to the file, which the near side shares
            send_fd(chan, b"c%d" % port, out.fileno())
            out.close()
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def pipe(a: socket.socket, b: socket.socket) -> None:
    def copy(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    threading.Thread(target=copy, args=(a, b), daemon=True).start()
    threading.Thread(target=copy, args=(b, a), daemon=True).start()


def main() -> None:
    args = sys.argv[1:]
    split = args.index("--") if "--" in args else len(args)
    ports = [int(args[i + 1]) for i in range(split) if args[i] == "--forward"]
    command = args[split + 1:]
    near, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # one message, one hand-over
    ready_r, ready_w = os.pipe()
    pid = os.fork()  # before any thread: the far side unshares, which a threaded process cannot
    if pid == 0:
        near.close()
        os.close(ready_r)
        try:
            far_side(far, ports, command, ready_w)
        finally:
            os._exit(0)
    far.close()
    os.close(ready_w)
    with os.fdopen(ready_r) as ready:
        line = ready.readline()
    if not line:
        sys.exit("forwarder: the far side failed to start")
    requests = threading.Lock()  # one connect request at a time on the shared channel
    replies: list[tuple[bytes, int]] = []
    replied = threading.Condition()

    def near_side() -> None:
        """Take the far side's messages: accepted connections (connect here and pipe) and requested sockets."""
        while True:
            try:
                tag, fd = recv_fd(near)
            except (EOFError, OSError):
                os._exit(0)
            if tag.startswith(b"a"):
                far_conn = socket.socket(fileno=fd)
                try:
                    here = socket.create_connection(("127.0.0.1", int(tag[1:])), timeout=5)
                except OSError:
                    far_conn.close()
                    continue
                here.settimeout(None)
                pipe(far_conn, here)
            else:
                with replied:
                    replies.append((tag, fd))
                    replied.notify()

    def reverse(port: int) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        print(f"reverse {port} {listener.getsockname()[1]}", flush=True)

        def serve() -> None:
            while True:
                conn, _ = listener.accept()
                with requests, replied:
                    near.send(b"c%d" % port)
                    replied.wait_for(lambda: bool(replies), timeout=10)
                    got = replies.pop() if replies else None
                if got is None or got[1] < 0:
                    conn.close()
                    continue
                far_conn = socket.socket(fileno=got[1])
                far_conn.setblocking(True)
                pipe(conn, far_conn)

        threading.Thread(target=serve, daemon=True).start()

    threading.Thread(target=near_side, daemon=True).start()
    print(line.strip(), flush=True)
    for request in sys.stdin:
        word, _, value = request.strip().partition(" ")
        if word == "reverse":
            reverse(int(value))
    near.close()
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()

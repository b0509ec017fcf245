"""Each pytest-xdist worker in a network namespace of its own.

Why: the extension finds servers by polling the fixed loopback ports 8766-8775 and connects to every live server it
finds. Two workers sharing one loopback would have one worker's browser connect to the other worker's server. In a
private network namespace each worker has its own loopback, so its browsers meet only its own servers (and other
test runs on the machine meet none of them).

How: execnet starts a worker as ``<python> -u -c <bootstrap>``; ``tests/conftest.py`` makes that python
``python tests/netns.py``, which enters a new network namespace (as root: ``unshare(CLONE_NEWNET)``; otherwise
with a user namespace that maps only our own uid and gid), brings its ``lo`` up, checks a loopback connection, and
then execs the real interpreter with the same arguments. It runs before the worker has any thread, which
``unshare`` needs for a user namespace.

    python tests/netns.py --check     # exit 0 if workers can be isolated, else 1 and the reason on stderr

Stdlib only: it runs before anything is imported.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
MARKER = "AI_BRIDGE_TESTS_NETNS"  # set in the worker's environment: "1" once isolated


def enter_private_netns() -> None:
    """Move this (single-threaded) process into a new network namespace with its loopback up. Raises OSError."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWNET if uid == 0 else CLONE_NEWUSER | CLONE_NEWNET
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare({'CLONE_NEWNET' if uid == 0 else 'CLONE_NEWUSER|CLONE_NEWNET'}): "
                           f"{os.strerror(err)}")
    if flags & CLONE_NEWUSER:  # map only ourselves: files, sockets' peer uid and os.getuid() stay as they were
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH22x", b"lo", 0)
        current = struct.unpack("16sH22x", fcntl.ioctl(s, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", current | IFF_UP))
    # A loopback round trip, so that a namespace we cannot use is found here and not as a puzzling test failure.
    with socket.create_server(("127.0.0.1", 0)) as server, \
            socket.create_connection(server.getsockname()[:2], timeout=5):
        server.accept()[0].close()
    os.environ[MARKER] = "1"


def main() -> None:
    if sys.argv[1:] == ["--check"]:
        try:
            enter_private_netns()
        except OSError as e:
            print(e, file=sys.stderr)
            sys.exit(1)
        sys.exit(0)
    enter_private_netns()
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])


if __name__ == "__main__":
    main()

"""Loopback ports reserved for servers that bind them seconds later (the
Kafka brokers' listeners, HAProxy's frontends in bench/real_kafka.py).

Why not "bind port 0, close, hand the number on": such a port comes from the
kernel's ephemeral range (net.ipv4.ip_local_port_range). Between closing the
probe and the JVM's bind (format, JVM start: seconds), any process on the
machine that connects anywhere may get that number as its local port, and
the broker then dies with "Address already in use" (seen once in the full
parallel suite, a client matrix connecting beside a cluster starting).
Ports below the ephemeral range are never given to outgoing connections, so
only a server choosing the same number could take one; every process using
this module agrees through an exclusive flock(2) on a per-port file, held
until release() or until the process exits (the kernel drops the lock).
"""

import fcntl
import os
import random
import socket
import tempfile

LOCK_DIR = os.path.join(tempfile.gettempdir(), "epochgate-ports")
# The lowest port handed out; the highest is just below the ephemeral range.
FIRST_PORT = 20000
RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"


def ephemeral_first():
    """First port of the kernel's ephemeral range (32768 if unreadable)."""
    try:
        with open(RANGE_FILE) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(host, port):
    s = socket.socket()
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


class PortReservation:
    """`n` distinct ports on `host`, each free now and locked for this
    process until release(). Raises RuntimeError if `n` cannot be found
    among a bounded number of candidates."""

    def __init__(self, n, host="127.0.0.1"):
        self.ports = []
        self._locks = []
        end = ephemeral_first()
        start = FIRST_PORT if end - FIRST_PORT >= 1024 else 1024
        os.makedirs(LOCK_DIR, mode=0o1777, exist_ok=True)
        tried = 0
        for port in random.sample(range(start, end), min(end - start, 64 + 16 * n)):
            if len(self.ports) == n:
                break
            tried += 1
            fd = os.open(os.path.join(LOCK_DIR, str(port)), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            if not _bindable(host, port):
                os.close(fd)
                continue
            self.ports.append(port)
            self._locks.append(fd)
        if len(self.ports) < n:
            self.release()
            raise RuntimeError("found %d of %d free ports in %d..%d after %d tries"
                               % (len(self.ports), n, start, end - 1, tried))

    def release(self):
        """Unlocks every port (the servers bound to them keep them)."""
        for fd in self._locks:
            os.close(fd)
        self._locks = []

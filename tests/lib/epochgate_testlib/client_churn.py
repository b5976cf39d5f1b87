"""Client connections that go away with a request in flight, as flaky clients,
killed pods and load balancers' health checks do: the shapes the leak test
(tests/faults/test_client_churn.py) and the soak (tools/soak/soak.py) drive,
and the gauges that must return to zero once the clients are gone.

A shape is a function (address, tls_context, server_name) -> None that opens
one connection, leaves it in the state the shape names and closes it, with
a FIN (socket.close) or a RST (SO_LINGER 0 then close). Nothing here waits
without a timeout; nothing binds; every address is the caller's (loopback).
"""

import socket
import struct
import threading
import time

from . import kafka_wire as kw

# Gauges of what client connections leave held (docs/metrics.md, "Memory
# held for clients"): all 0 once every client has gone.
HELD_GAUGES = ("epochgate_sessions_live", "epochgate_in_flight_requests",
               "epochgate_upstream_connections_live")
POOL_GAUGES = ("epochgate_buffer_pool_buffers", "epochgate_buffer_pool_bytes")


def _connect(address, tls, server_name, timeout=10.0):
    s = socket.create_connection(address, timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls is not None:
        s = tls.wrap_socket(s, server_hostname=server_name or address[0])
    return s


def _close(s, rst):
    if rst:
        # Linger 0: close() sends a RST and drops what was not sent. Set on
        # the raw socket (an SSLSocket passes the option through).
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def _recv_frame(s, timeout):
    """One whole response frame, or None when it did not come in time."""
    s.settimeout(timeout)
    data = b""
    try:
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                return None
            data += chunk
    except (socket.timeout, OSError):
        return None
    return data


def close_at_once(rst=False):
    """Connects and closes before sending anything."""
    def shape(address, tls=None, server_name=None):
        _close(_connect(address, tls, server_name), rst)
    return shape


def request_then_close(frame, rst=False):
    """Sends `frame` (a whole request) and closes without reading: the
    request is in flight while epochgate still dials, or upstream."""
    def shape(address, tls=None, server_name=None):
        s = _connect(address, tls, server_name)
        try:
            s.sendall(frame)
        finally:
            _close(s, rst)
    return shape


def half_frame_then_close(frame, rst=True):
    """Sends the first half of `frame` and closes: a partial frame held."""
    def shape(address, tls=None, server_name=None):
        s = _connect(address, tls, server_name)
        try:
            s.sendall(frame[:max(1, len(frame) // 2)])
        finally:
            _close(s, rst)
    return shape


def in_flight_upstream_then_close(frame, rst=False, answer_timeout=5.0):
    """Sends ApiVersions and `frame` together, waits for the ApiVersions
    answer (the session is open: `frame` was forwarded right behind it, in
    order) and closes while `frame` is still owed: it sits at the broker
    (a Fetch long poll, a slow broker) or its answer is on its way."""
    first = kw.api_versions_request(0x7E01, 0)

    def shape(address, tls=None, server_name=None):
        s = _connect(address, tls, server_name)
        try:
            s.sendall(first + frame)
            _recv_frame(s, answer_timeout)
        finally:
            _close(s, rst)
    return shape


class Churn:
    """Runs shapes against addresses from `threads` threads: `count` times in
    all (or, with count None, until stop() or `seconds`). Counts what was
    done and what failed (a refused or reset connect); never raises."""

    def __init__(self, jobs, threads=8, count=None, seconds=None, pause_s=0.0):
        # jobs: [(name, shape, address, tls, server_name)], taken round-robin.
        self.jobs = list(jobs)
        self.threads = threads
        self.count = count
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.pause_s = pause_s
        self.done = {}
        self.failed = {}
        self.errors = []
        self._next = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._workers = []

    def _take(self):
        with self._lock:
            if self._stop.is_set():
                return None
            if self.count is not None and self._next >= self.count:
                return None
            if self.deadline is not None and time.monotonic() >= self.deadline:
                return None
            job = self.jobs[self._next % len(self.jobs)]
            self._next += 1
            return job

    def _run(self):
        while True:
            job = self._take()
            if job is None:
                return
            name, shape, address, tls, server_name = job
            try:
                shape(address, tls, server_name)
                ok = True
            except (OSError, ValueError) as e:
                ok = False
                with self._lock:
                    if len(self.errors) < 20:
                        self.errors.append("%s: %r" % (name, e))
            with self._lock:
                bucket = self.done if ok else self.failed
                bucket[name] = bucket.get(name, 0) + 1
            if self.pause_s:
                self._stop.wait(self.pause_s)

    def start(self):
        for _ in range(self.threads):
            t = threading.Thread(target=self._run, daemon=True)
            t.start()
            self._workers.append(t)
        return self

    def stop(self):
        self._stop.set()

    def join(self, timeout):
        deadline = time.monotonic() + timeout
        for t in self._workers:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._workers)

    def total(self):
        return sum(self.done.values())


def held(gate):
    """{gauge: value} of HELD_GAUGES and POOL_GAUGES from epochgate's /metrics."""
    from . import prom_text
    text = gate.metrics()
    return {name: prom_text.metric(text, name) for name in HELD_GAUGES + POOL_GAUGES}


def wait_released(gate, timeout=20.0):
    """Waits (bounded) until every HELD_GAUGES gauge and the pools are at 0
    (the pools shed what stayed unused for a sweep interval); returns the
    last values seen either way."""
    deadline = time.monotonic() + timeout
    while True:
        values = held(gate)
        if all(v == 0 for v in values.values()) or time.monotonic() >= deadline:
            return values
        time.sleep(0.5)


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0

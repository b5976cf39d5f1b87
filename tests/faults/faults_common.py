"""Shared helpers for tests/faults: metrics, epochgate with a limits config,
and client probes (send a frame, wait for a close). Builds on
tests/lib/epochgate_testlib/harness.py, kafka_wire.py and prom_text.py (imported,
never copied).
Must never bind anything but 127.0.0.1 or wait without a deadline.
"""

import os
import socket
import time


from epochgate_testlib import harness  # noqa: E402,F401  (re-exported for the test files)
from epochgate_testlib import kafka_wire as kw  # noqa: E402
from epochgate_testlib.prom_text import metric, samples  # noqa: E402,F401  (re-exported)


def metric_of(gate, name, **labels):
    return metric(gate.metrics(), name, **labels)


def wait_metric(gate, name, at_least, timeout=10.0, **labels):
    """Waits until metric `name`{labels} >= at_least; returns its value."""
    deadline = time.monotonic() + timeout
    value = 0.0
    while time.monotonic() < deadline:
        value = metric_of(gate, name, **labels)
        if value >= at_least:
            return value
        time.sleep(0.1)
    raise AssertionError("%s%s stayed at %s (< %s) for %.0fs" % (name, labels, value, at_least,
                                                                 timeout))


def write_config(h, text, name="epochgate.yaml"):
    path = os.path.join(h.workdir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def start_gate(h, upstream, limits=None, extra_yaml="", args=()):
    """epochgate in front of `upstream` with `limits` (dict) in its config."""
    yaml = ""
    if limits:
        yaml += "limits:\n" + "".join("  %s: %s\n" % kv for kv in limits.items())
    yaml += extra_yaml
    argv = list(args)
    if yaml:
        argv = ["--config", write_config(h, yaml)] + argv
    return h.start_gate(upstream, argv)


def connect(address, timeout=10.0):
    """kafka_wire.Connection to (host, port)."""
    return kw.Connection(address[0], address[1], timeout=timeout)


def api_versions_ok(conn, corr=0x1234, timeout=10.0):
    """Sends ApiVersions v0 and checks the answer (connection works)."""
    conn.send(kw.api_versions_request(corr, 0))
    frame = conn.recv_frame(timeout=timeout)
    got, error, apis = kw.parse_api_versions_response(frame, 0)
    assert got == corr and error == 0 and kw.API_METADATA in apis, (got, error)
    return True


def closed_by_peer(conn, timeout):
    """True if the peer closes the connection (EOF or reset) within `timeout`
    seconds, discarding whatever bytes arrive before that. False if it stays open."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        conn.sock.settimeout(left)
        try:
            chunk = conn.sock.recv(1 << 16)
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
        if not chunk:
            return True


def bootstrap_address(gate):
    return harness.parse_hostport(gate.bootstrap)


def node_addresses(conn, corr=0x4D01):
    """{node id: (host, port)} that epochgate advertises (Metadata v1)."""
    conn.send(kw.metadata_request(corr, [], version=1))
    md = kw.parse_metadata_response(conn.recv_frame(), 1)
    return {node: (host, port) for node, (host, port, _) in md["brokers"].items()}


_DEAD_PORTS = []  # kept open for the test process's life


def dead_port():
    """A loopback port nothing listens on: bound and never listening, so a
    connect is refused and no other process can start listening on it while
    the test runs (a port bound then released could be taken meanwhile)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _DEAD_PORTS.append(s)
    return s.getsockname()[1]

"""Security properties of epochgate's TLS listeners, as an attacker on the
network would try them (docs/security.md points here):

- a TLS listener never serves plaintext: with limits.max_connections filled
  by TCP connections that never start their handshake, a plaintext
  ApiVersions on the bootstrap port and on a broker port is closed
  unanswered (nothing reaches the broker either), with 1 and 2 workers and
  with client_auth: required; once a slot frees, a real TLS client
  (Python's ssl with the client certificate) is served.
"""

import os
import socket
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tls_lib  # noqa: E402
from tls_lib import harness  # noqa: E402
import kafka_wire as kw  # noqa: E402


def _client_context(c, client="client"):
    ctx = ssl.create_default_context(cafile=c.ca)
    if client:
        ctx.load_cert_chain(c.path(client, "crt"), c.path(client, "key"))
    return ctx


def _tls_conn(c, port, client="client"):
    return kw.Connection(harness.LOOPBACK, port, tls=_client_context(c, client),
                         server_name="localhost")


def _unanswered_close(sock, timeout):
    """(closed, bytes received) within `timeout` seconds."""
    got = b""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False, got
        sock.settimeout(left)
        try:
            chunk = sock.recv(1 << 16)
        except socket.timeout:
            return False, got
        except (ConnectionResetError, BrokenPipeError):
            return True, got
        if not chunk:
            return True, got
        got += chunk


def _plaintext_refused_over_the_limit(h, workers):
    c = tls_lib.certs(h)
    cluster = h.start_cluster(2, ["t:1:1"])
    args = tls_lib.write_gate_config(
        h, c, client_auth="required", upstream_tls=False,
        extra={"limits": {"max_connections": 3}, "workers": workers})
    gate = h.start_gate(cluster.bootstrap, args)
    port = gate.bootstrap_address[1]
    # The broker ports, learned over TLS, before the slots are taken.
    probe = _tls_conn(c, port)
    probe.send(kw.metadata_request(0x10, [], version=1))
    md = kw.parse_metadata_response(probe.recv_frame(), 1)
    broker_ports = sorted(p for _, p, _ in md["brokers"].values())
    assert broker_ports and port not in broker_ports, md["brokers"]
    probe.close()
    harness.wait_until(lambda: tls_lib.metrics_value(
        gate, "epochgate_connections_closed_total") >= 1, 5, what="the probe's close")
    # Three connections that never start TLS: pending handshakes.
    idle = []
    for _ in range(3):
        s = socket.create_connection((harness.LOOPBACK, port), timeout=5)
        h.on_close(s.close)
        idle.append(s)
    time.sleep(0.5)  # every one adopted by its worker
    answered_before = tls_lib.metrics_value(gate, "epochgate_requests_total")
    for target in (port, broker_ports[0]):
        plain = socket.create_connection((harness.LOOPBACK, target), timeout=5)
        h.on_close(plain.close)
        plain.sendall(kw.api_versions_request(0x4141, 0))
        closed, got = _unanswered_close(plain, 5)
        assert got == b"", "port %d answered plaintext over the limit: %r" % (target, got[:64])
        assert closed, "port %d kept a plaintext connection open over the limit" % target
    harness.wait_until(lambda: tls_lib.metrics_value(
        gate, "epochgate_connections_closed_total", reason="max_connections") >= 2, 5,
        what="both refusals counted as max_connections")
    assert tls_lib.metrics_value(gate, "epochgate_requests_total") == answered_before
    log = open(gate.proc.log_path, errors="replace").read()
    assert "limits.max_connections" in log, log[-1500:]
    # A slot frees: a real TLS client with its certificate is served.
    idle.pop().close()
    deadline = time.monotonic() + 10
    while True:
        try:
            conn = _tls_conn(c, broker_ports[0])
            conn.send(kw.api_versions_request(0x4242, 0))
            corr, error, keys = kw.parse_api_versions_response(conn.recv_frame(timeout=5), 0)
            break
        except (OSError, kw.WireError, ssl.SSLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    assert corr == 0x4242 and error == 0 and kw.API_METADATA in keys, (corr, error)
    conn.close()
    h.note("workers %d: plaintext refused unanswered on ports %d and %d; TLS served after a "
           "slot freed" % (workers, port, broker_ports[0]))


def test_plaintext_never_served_over_the_limit_one_worker(h):
    _plaintext_refused_over_the_limit(h, 1)


test_plaintext_never_served_over_the_limit_one_worker.timeout = 120


def test_plaintext_never_served_over_the_limit_two_workers(h):
    _plaintext_refused_over_the_limit(h, 2)


test_plaintext_never_served_over_the_limit_two_workers.timeout = 120


if __name__ == "__main__":
    harness.main(globals())

"""Security properties of epochgate's TLS listeners, as an attacker on the
network would try them (docs/security.md points here):

- a TLS listener never serves plaintext: with limits.max_connections filled
  by TCP connections that never start their handshake, a plaintext
  ApiVersions on the bootstrap port and on a broker port is closed
  unanswered (nothing reaches the broker either), with 1 and 2 workers and
  with client_auth: required; once a slot frees, a real TLS client
  (Python's ssl with the client certificate) is served;
- TLS 1.2 defaults are forward-secret AEAD: `openssl s_client -tls1_2`
  offering only AES128-SHA or AES256-SHA256 (RSA key exchange, CBC) gets no
  handshake, ECDHE-RSA-AES128-GCM-SHA256 does; `tls.cipher_list` set to
  one suite is what the listener then accepts;
- upstream hostname verification reads subjectAltName only (RFC 6125): a
  broker certificate whose subject CN is the dialled host but which has no
  subjectAltName is refused (`hostname_mismatch`).
"""

import os
import re
import socket
import ssl
import time

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402


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


def _open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def _tcp_sockets(pid):
    """(local port, remote port) of each TCP socket process `pid` holds."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    for table in ("tcp", "tcp6"):
        with open("/proc/%d/net/%s" % (pid, table)) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[9] in inodes:
                    out.append((int(cols[1].rsplit(":", 1)[1], 16),
                                int(cols[2].rsplit(":", 1)[1], 16)))
    return out


def test_pending_handshakes_hold_bounded_descriptors(h):
    # 40 connections that never start TLS against limits.max_connections 4:
    # four become pending handshakes, each holding one descriptor and
    # dialling nothing; the rest are closed as max_connections. So the
    # descriptors epochgate holds for a peer's connections are bounded by
    # the limit whatever the peer opens, and the process stays within the
    # budget it states (epochgate_fds_needed).
    limit, opened = 4, 40
    c = tls_lib.certs(h)
    cluster = h.start_cluster(1, ["t:1:1"])
    args = tls_lib.write_gate_config(
        h, c, upstream_tls=False,
        extra={"limits": {"max_connections": limit}, "tls": {"handshake_timeout_ms": 60000},
               "workers": 2})
    gate = h.start_gate(cluster.bootstrap, args)
    pid = gate.proc.proc.pid
    port = gate.bootstrap_address[1]

    def held():
        return sum(1 for lp, rp in _tcp_sockets(pid) if lp == port and rp != 0)
    idle = []
    for _ in range(opened):
        s = socket.create_connection((harness.LOOPBACK, port), timeout=5)
        h.on_close(s.close)
        idle.append(s)
    harness.wait_until(lambda: tls_lib.metrics_value(
        gate, "epochgate_connections_closed_total", reason="max_connections") >= opened - limit,
        15, what="%d connections refused as max_connections" % (opened - limit))
    harness.wait_until(lambda: held() <= limit, 5,
                       what="the refused connections' descriptors closed")
    time.sleep(0.5)  # nothing more is accepted or closed
    clients = held()
    needed = tls_lib.metrics_value(gate, "epochgate_fds_needed")
    assert clients == limit, ("%d connections without TLS (limit %d): epochgate holds %d of them"
                              % (opened, limit, clients))
    upstream = tls_lib.metrics_value(gate, "epochgate_connections_active", side="upstream")
    assert upstream == 0, "pending handshakes dialled brokers: %d upstream connections" % upstream
    assert _open_fds(pid) <= needed, (_open_fds(pid), needed)
    refused = tls_lib.metrics_value(gate, "epochgate_connections_closed_total",
                                    reason="max_connections")
    assert refused == opened - limit, "refused %d of %d (limit %d)" % (refused, opened, limit)
    h.note("%d connections without TLS, limit %d: %d refused, %d held (one descriptor each), "
           "no upstream connection; %d descriptors open, budget %d"
           % (opened, limit, refused, clients, _open_fds(pid), needed))


test_pending_handshakes_hold_bounded_descriptors.timeout = 90


def _s_client_cipher(h, port, c, cipher):
    hs = tls_lib.s_client(h, port, ca=c.ca, extra=("-tls1_2", "-cipher", cipher), linger_s=0.5)
    m = re.search(r"Cipher is (\S+)", hs.out)
    return m.group(1) if m else None


def test_tls12_suites_are_forward_secret_aead_by_default(h):
    c = tls_lib.certs(h)
    cluster = h.start_cluster(1, ["t:1:1"])
    gate = h.start_gate(cluster.bootstrap, tls_lib.write_gate_config(
        h, c, cert="server-rsa", upstream_tls=False))
    port = gate.bootstrap_address[1]
    for weak in ("AES128-SHA", "AES256-SHA256"):
        got = _s_client_cipher(h, port, c, weak)
        assert got in (None, "(NONE)"), "TLS 1.2 %s was accepted: %s" % (weak, got)
    got = _s_client_cipher(h, port, c, "ECDHE-RSA-AES128-GCM-SHA256")
    assert got == "ECDHE-RSA-AES128-GCM-SHA256", got
    # Tightened to one suite: others are refused.
    gate.stop()
    gate2 = h.start_gate(cluster.bootstrap, tls_lib.write_gate_config(
        h, c, cert="server-rsa", upstream_tls=False, name="one-suite.yaml",
        extra={"tls": {"cipher_list": "ECDHE-RSA-CHACHA20-POLY1305"}}))
    port2 = gate2.bootstrap_address[1]
    assert _s_client_cipher(h, port2, c, "ECDHE-RSA-AES128-GCM-SHA256") in (None, "(NONE)")
    assert _s_client_cipher(h, port2, c, "ECDHE-RSA-CHACHA20-POLY1305") == \
        "ECDHE-RSA-CHACHA20-POLY1305"


test_tls12_suites_are_forward_secret_aead_by_default.timeout = 120


def test_upstream_hostname_is_checked_against_subject_alt_names_only(h):
    c = tls_lib.certs(h)
    c.leaf("cn-only", "--cn", "localhost", "--san", "")
    tc = tls_lib.TlsCluster(h, ["t:1:1"], brokers=1, c=c, cert="cn-only",
                            advertise_host="localhost")
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, c, client_tls=False))
    conn = kw.Connection(harness.LOOPBACK, gate.bootstrap_address[1], timeout=10)
    conn.send(kw.api_versions_request(0x5151, 0))
    closed, got = _unanswered_close(conn.sock, 15)
    assert closed and got == b"", "a broker certificate with only CN=localhost was accepted"
    harness.wait_until(lambda: tls_lib.metrics_value(
        gate, "epochgate_tls_handshakes_total", side="upstream", reason="hostname_mismatch") >= 1,
        10, what="the upstream handshake refused as hostname_mismatch")


test_upstream_hostname_is_checked_against_subject_alt_names_only.timeout = 120


if __name__ == "__main__":
    harness.main(globals())

"""TLS failures are clear and local: each closes one connection, says why
(what the peer sees, epochgate's log line, a metric), and every other
connection keeps working. The peer is `openssl s_client` or a raw socket on
the client side, HAProxy presenting bad certificates on the upstream side.

Client side: a client trusting another CA, the expired and not-yet-valid
certificates, a client without a certificate when one is required,
plaintext Kafka bytes (ApiVersions) on a TLS port, a handshake that never
starts (timeout). Upstream side: a broker certificate from an unknown CA,
expired, for the wrong host, and TLS to a plaintext broker.
"""

import re
import socket
import time

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402


def _round_trip_ok(h, gate, c, client=None):
    """A kcat produce-and-consume through epochgate still works."""
    import uuid
    ssl = tls_lib.rdkafka_ssl(c, client)
    v = uuid.uuid4().hex
    h.kcat(["-b", gate.bootstrap, "-P", "-t", "t", "-p", "0"] + ssl, input=(v + "\n").encode())
    got = h.kcat(["-b", gate.bootstrap, "-C", "-t", "t", "-p", "0", "-o", "beginning", "-e",
                  "-q"] + ssl).stdout.split()
    assert v in got, got


def _failed(gate, side, reason):
    return tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side=side,
                                 result="failed", reason=reason)


def _logged(gate, *needles, timeout=5):
    def seen():
        text = open(gate.proc.log_path, errors="replace").read()
        return all(n in text for n in needles)
    harness.wait_until(seen, timeout, what="a log line with %s" % (needles,))


def _peers_named(gate):
    """Every TLS failure line names its peer (an address, or the server
    name dialled): never "with broker  failed"."""
    text = open(gate.proc.log_path, errors="replace").read()
    lines = [l for l in text.splitlines()
             if re.search(r"TLS (handshake with|error from) (broker|client) ", l)]
    assert lines, "no TLS failure line"
    for line in lines:
        m = re.search(r"TLS (?:handshake with|error from) (?:broker|client) (\S+)", line)
        assert m and m.group(1) not in ("failed", "failed:") and not m.group(1).startswith(":"), \
            line
    return lines


def test_client_side_failures_close_one_connection(h):
    tc = tls_lib.TlsCluster(h, ["t:1:1"])
    c = tc.certs
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(
        h, c, client_auth="required", extra={"tls": {"handshake_timeout_ms": 1000}}))
    port = gate.bootstrap_address[1]
    # A long-lived, established client connection that must survive all of it.
    import ssl as _ssl
    ctx = _ssl.create_default_context(cafile=c.ca)
    ctx.load_cert_chain(c.path("client", "crt"), c.path("client", "key"))
    keeper = kw.Connection("127.0.0.1", port, tls=ctx)
    h.on_close(keeper.close)
    keeper.send(kw.api_versions_request(1))
    kw.parse_api_versions_response(keeper.recv_frame())

    # The client trusts another CA: its own verification fails.
    hs = tls_lib.s_client(h, port, ca=c.other_ca, cert=c.path("client", "crt"),
                          key=c.path("client", "key"))
    # 20 (unable to get local issuer) or 19 (self-signed root in the chain sent).
    assert hs.verify_code in (19, 20), hs.out[-800:]
    # No client certificate while required.
    before = _failed(gate, "client", "no_client_certificate")
    hs = tls_lib.s_client(h, port, ca=c.ca, send=kw.api_versions_request(2))
    assert "certificate required" in hs.out or "handshake failure" in hs.out, hs.out[-800:]
    harness.wait_until(lambda: _failed(gate, "client", "no_client_certificate") > before, 5,
                       what="no_client_certificate counted")
    # A client certificate from another CA.
    hs = tls_lib.s_client(h, port, ca=c.ca, cert=c.path("untrusted-client", "crt"),
                          key=c.path("untrusted-client", "key"))
    assert "unknown ca" in hs.out or "bad certificate" in hs.out, hs.out[-800:]
    # Plaintext Kafka on the TLS port: no Kafka answer, the connection closes.
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(kw.api_versions_request(3))
        s.settimeout(5)
        data = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            raise AssertionError("plaintext connection not closed within 5 s")
    assert not data.startswith(b"\x00\x00"), "epochgate answered plaintext Kafka: %r" % data[:20]
    harness.wait_until(lambda: _failed(gate, "client", "not_tls") >= 1, 5, what="not_tls counted")
    # A handshake that never starts is closed after handshake_timeout_ms.
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        t0 = time.monotonic()
        s.settimeout(10)
        try:
            assert s.recv(1) == b"", "bytes before a ClientHello?"
        except ConnectionResetError:
            pass  # closed with a reset: closed all the same
        waited = time.monotonic() - t0
    assert 0.8 <= waited < 8, "closed after %.2f s (handshake_timeout_ms 1000)" % waited
    harness.wait_until(lambda: _failed(gate, "client", "timeout") >= 1, 5, what="timeout counted")
    # The established connection and new good clients are unaffected.
    keeper.send(kw.api_versions_request(4))
    assert keeper.recv_frame()
    _round_trip_ok(h, gate, c, client="client")


test_client_side_failures_close_one_connection.timeout = 180


def test_expired_and_not_yet_valid_client_certificates(h):
    import datetime
    tc = tls_lib.TlsCluster(h, ["t:1:1"])
    c = tc.certs
    day = datetime.timedelta(days=1)
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = lambda t: t.strftime("%Y%m%d%H%M%SZ")  # noqa: E731
    c.leaf("expired-client", "--client", "--start", stamp(now - 30 * day),
           "--end", stamp(now - day))
    c.leaf("notyet-client", "--client", "--start", stamp(now + day), "--end", stamp(now + 30 * day))
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, c, client_auth="required"))
    port = gate.bootstrap_address[1]
    for name, reason, alert in (("expired-client", "expired", "certificate expired"),
                                ("notyet-client", "not_yet_valid", "bad certificate")):
        hs = tls_lib.s_client(h, port, ca=c.ca, cert=c.path(name, "crt"), key=c.path(name, "key"),
                              send=kw.api_versions_request(7))
        assert alert in hs.out or "handshake failure" in hs.out, (name, hs.out[-800:])
        harness.wait_until(lambda: _failed(gate, "client", reason) >= 1, 5,
                           what="%s counted" % reason)
        _logged(gate, reason.replace("_", " ") if reason != "expired" else "expired")
    _round_trip_ok(h, gate, c, client="client")


def test_upstream_failures_are_local(h):
    c = tls_lib.certs(h)
    good = tls_lib.TlsCluster(h, ["t:1:1"], c=c)
    cases = [("untrusted", "unknown_ca", "certificate verify failed"),
             ("expired", "expired", "expired"),
             ("wronghost", "hostname_mismatch", "certificate verify failed")]
    for cert, reason, text in cases:
        bad = tls_lib.TlsCluster(h, ["t:1:1"], c=c, cert=cert)
        gate = h.start_gate(bad.bootstrap, tls_lib.write_gate_config(h, c, name=cert + ".yaml") +
                            ["--log-level", "debug"])
        r = h.kcat(["-b", gate.bootstrap, "-L", "-m", "5"] + tls_lib.rdkafka_ssl(c),
                   check=False, timeout=30)
        assert r.returncode != 0 or "0 brokers" in r.stdout, (cert, r.stdout)
        harness.wait_until(lambda: _failed(gate, "upstream", reason) >= 1, 15,
                           what="upstream %s counted" % reason)
        # The log line names the broker, the reason and OpenSSL's words.
        _logged(gate, "TLS handshake with broker", "failed: %s: " % reason, text)
        _peers_named(gate)
        gate.stop()
    # TLS to a plaintext broker: the handshake fails, the client sees an error.
    plain = h.start_cluster(1, ["t:1:1"])
    gate = h.start_gate(plain.bootstrap, tls_lib.write_gate_config(h, c, name="plain.yaml"))
    r = h.kcat(["-b", gate.bootstrap, "-L", "-m", "5"] + tls_lib.rdkafka_ssl(c), check=False,
               timeout=30)
    assert r.returncode != 0 or "0 brokers" in r.stdout, r.stdout
    harness.wait_until(lambda: tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total",
                                                     side="upstream", result="failed") >= 1, 15,
                       what="a failed upstream handshake")
    h.note("TLS to a plaintext broker: " + _peers_named(gate)[-1].split("] ", 1)[-1][:160])
    # Meanwhile a gate in front of the good cluster works as before.
    gate = h.start_gate(good.bootstrap, tls_lib.write_gate_config(h, c, name="good.yaml"))
    _round_trip_ok(h, gate, c)


test_upstream_failures_are_local.timeout = 240


if __name__ == "__main__":
    harness.main(globals())

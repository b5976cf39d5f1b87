"""What epochgate refuses on its TLS ports, seen by independent peers.

- Renegotiation: `openssl s_client -tls1_2` asks to renegotiate (its `R`
  command) on a connection that carried Kafka already. epochgate refuses
  (OpenSSL's no_renegotiation alert, SSL_OP_NO_RENEGOTIATION), counts it in
  epochgate_tls_renegotiations_refused_total{side="client"} and logs the
  peer. An OpenSSL client treats that refusal as fatal and closes; only its
  connection ends: another client's connection opened before keeps working.
  (The broker side is covered against `openssl s_server` in tls_unit_tests.)
- tls.plaintext_clients: loopback: librdkafka 2.15.1 speaking plaintext
  from 127.0.0.1 produces and consumes on the TLS ports (bootstrap and
  broker listeners), while TLS clients use the same ports; without that key
  the same plaintext client is refused (not_tls) and gets no Metadata.
"""

import os
import ssl
import subprocess
import time

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402


def _wait_output(proc_out_path, text, timeout):
    return harness.wait_until(lambda: text in open(proc_out_path, "rb").read().decode(
        errors="replace"), timeout, what="s_client printing %r" % text)


def test_client_renegotiation_is_refused(h):
    from epochgate_testlib import kafka_wire as kw
    tc = tls_lib.TlsCluster(h, ["t:1:1"])
    c = tc.certs
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, c))
    port = gate.bootstrap_address[1]
    # A bystander connection, open across the refusal.
    other = kw.Connection(harness.LOOPBACK, port, tls=ssl.create_default_context(cafile=c.ca))
    out_path = os.path.join(h.workdir, "s_client-renegotiate.out")
    out = open(out_path, "wb")
    proc = subprocess.Popen(["openssl", "s_client", "-connect", "%s:%d" % (harness.LOOPBACK, port),
                             "-tls1_2", "-CAfile", c.ca, "-verify_return_error", "-no_ign_eof"],
                            stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_output(out_path, "Verify return code: 0", 10)
        # Kafka over the TLS 1.2 connection first: ApiVersions is answered.
        proc.stdin.write(kw.api_versions_request(0x5252))
        proc.stdin.flush()
        harness.wait_until(lambda: os.path.getsize(out_path) > 0 and b"\x00\x00\x52\x52" in
                           open(out_path, "rb").read(), 10, what="the ApiVersions answer")
        time.sleep(0.3)  # s_client reads stdin per chunk: "R" must come alone
        proc.stdin.write(b"R\n")
        proc.stdin.flush()
        _wait_output(out_path, "RENEGOTIATING", 10)
        harness.wait_until(lambda: proc.poll() is not None, 10,
                           what="s_client ending after the refusal")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=5)
        out.close()
    text = open(out_path, "rb").read().decode(errors="replace")
    assert "no renegotiation" in text, text[-1200:]
    harness.wait_until(lambda: tls_lib.metrics_value(
        gate, "epochgate_tls_renegotiations_refused_total", side="client") == 1, 5,
        what="the refused renegotiation counted")
    log = open(gate.proc.log_path, errors="replace").read()
    assert "asked to renegotiate: refused" in log, log[-1500:]
    # The bystander is unaffected.
    other.send(kw.api_versions_request(0x5353))
    corr, error, keys = kw.parse_api_versions_response(other.recv_frame())
    assert corr == 0x5353 and error == 0 and keys, (corr, error)
    other.close()
    # TLS 1.3 has no renegotiation; nothing else was counted.
    assert tls_lib.metrics_value(gate, "epochgate_tls_renegotiations_refused_total",
                                 side="upstream") == 0


test_client_renegotiation_is_refused.timeout = 120


def test_plaintext_from_loopback_where_the_config_allows_it(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    c = tc.certs
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(
        h, c, extra={"tls": {"plaintext_clients": "loopback"}}))
    log = os.path.join(h.workdir, "plain.rdkafka.log")
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "t", "--messages", "600",
                         "--partitions-keyed", "--consume-group", "g-plain", "--debug", "broker",
                         "--log-file", log])
    assert s["passed"] and s["missing"] == 0 and s["duplicates"] == 0, s
    text = open(log, errors="replace").read()
    assert "ssl://" not in text, text[-800:]  # librdkafka spoke plaintext
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="client",
                                 reason="ok") == 0  # and no TLS handshake happened
    ports = h.connected_ports(log)
    assert gate.bootstrap_address[1] in ports and len(ports) >= 2, ports  # broker listeners too
    assert not ports & set(tc.ports), ports
    # TLS clients share those ports.
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "t", "--messages", "300",
                         "--partitions-keyed"] + tls_lib.rdkafka_ssl(c))
    assert s["passed"], s
    hs = tls_lib.s_client(h, gate.bootstrap_address[1], ca=c.ca, verify_host="localhost")
    assert hs.verify_code == 0, hs.out[-800:]
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="client",
                                 reason="not_tls") == 0


test_plaintext_from_loopback_where_the_config_allows_it.timeout = 180


def test_plaintext_refused_where_the_config_does_not_allow_it(h):
    tc = tls_lib.TlsCluster(h, ["t:1:1"])
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, tc.certs))
    r = h.run(["kcat", "-b", gate.bootstrap, "-L", "-m", "5"], timeout=30, check=False)
    assert r.returncode != 0 and "Metadata for" not in r.stdout, r.stdout + r.stderr
    harness.wait_until(lambda: tls_lib.metrics_value(
        gate, "epochgate_tls_handshakes_total", side="client", reason="not_tls") >= 1, 5,
        what="the plaintext client counted as not_tls")
    log = open(gate.proc.log_path, errors="replace").read()
    assert "not_tls" in log, log[-1500:]


test_plaintext_refused_where_the_config_does_not_allow_it.timeout = 90


if __name__ == "__main__":
    harness.main(globals())

"""The TLS rig itself, proven against independent software before any
epochgate test relies on it (no epochgate here).

- The certificates of tools/tls/make-certs.sh are what their names say, as
  `openssl verify` judges them (trusted, expired, not yet valid, wrong host,
  untrusted CA).
- HAProxy TLS in front of the mock cluster is a TLS Kafka cluster for kcat
  (librdkafka 2.0.2), kafka-python 2.0.2, confluent-kafka (librdkafka 2.0.2)
  and the project's librdkafka 2.15.1 peer: Metadata names the TLS ports,
  records go through and come back, a client trusting another CA is refused.
- With mTLS, HAProxy refuses a client without a certificate or with one from
  another CA, and lets the test CA's client certificate in.
- Brokers advertised as host names no resolver knows (what epochgate's SNI
  mode advertises) are reached by kafka-python with client_peer.py
  --resolve and by librdkafka 2.15.1 with rdkafka-check --resolve
  (resolve_cb), the TLS name still checked against the certificate.
"""

import os
import uuid

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402


def _verify(c, name, *extra):
    import subprocess
    r = subprocess.run(["openssl", "verify", "-CAfile", c.ca] + list(extra) +
                       [c.path(name, "leaf.crt")], capture_output=True, text=True, timeout=10)
    return r.returncode, r.stdout + r.stderr


def test_certificates_verify_as_named(h):
    for rsa in (False, True):
        c = tls_lib.tls_rig.make_certs(os.path.join(h.workdir, "rsa" if rsa else "ec"), rsa=rsa)
        expect = {
            "server": "OK", "server-rsa": "OK", "client": "OK",
            "expired": "certificate has expired",
            "notyet": "certificate is not yet valid",
            "untrusted": "unable to get local issuer certificate",
            "untrusted-client": "unable to get local issuer certificate",
            "wronghost": "OK",
        }
        for name, want in expect.items():
            rc, out = _verify(c, name)
            assert want in out and (rc == 0) == (want == "OK"), (name, rc, out)
        for host in ("localhost", "b-0.kafka.example.com", "b-17.kafka.example.com",
                     "kafka.example.com"):
            rc, out = _verify(c, "server", "-verify_hostname", host)
            assert rc == 0, (host, out)
        rc, out = _verify(c, "server", "-verify_ip", "127.0.0.1")
        assert rc == 0, out
        rc, out = _verify(c, "wronghost", "-verify_ip", "127.0.0.1")
        assert rc != 0 and "IP address mismatch" in out, out
        rc, out = _verify(c, "wronghost", "-verify_hostname", "localhost")
        assert rc != 0 and "hostname mismatch" in out, out
        # A wildcard covers one label only.
        rc, out = _verify(c, "server", "-verify_hostname", "a.b.kafka.example.com")
        assert rc != 0, out
        # The CA directory form trusts the same CA.
        import subprocess
        r = subprocess.run(["openssl", "verify", "-CApath", c.ca_dir, c.path("server", "leaf.crt")],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 0, r.stdout + r.stderr
        # The encrypted keys open with their password files and match their certificates.
        for name in ("client", "server"):
            r = subprocess.run(["openssl", "pkey", "-in", c.path(name + "-enc", "key"), "-passin",
                                "file:" + os.path.join(c.dir, name + "-key-password.txt"),
                                "-pubout"], capture_output=True, text=True, timeout=10)
            cert_pub = subprocess.run(["openssl", "x509", "-in", c.path(name, "leaf.crt"),
                                       "-noout", "-pubkey"], capture_output=True, text=True,
                                      timeout=10)
            assert r.returncode == 0 and r.stdout == cert_pub.stdout, (name, r.stderr)
        alg = "rsaEncryption" if rsa else "id-ecPublicKey"
        text = subprocess.run(["openssl", "x509", "-in", c.path("server", "leaf.crt"), "-noout",
                               "-text"], capture_output=True, text=True, timeout=10).stdout
        assert alg in text, text[:400]


def _kcat_round(h, bootstrap, ssl, topic, partition=0, n=20):
    sent = ["%s-%d" % (uuid.uuid4().hex[:8], i) for i in range(n)]
    h.kcat(["-b", bootstrap, "-P", "-t", topic, "-p", str(partition)] + ssl,
           input=("\n".join(sent) + "\n").encode())
    got = h.kcat(["-b", bootstrap, "-C", "-t", topic, "-p", str(partition), "-o", "beginning",
                  "-e", "-q"] + ssl).stdout.split()
    return sent, [g for g in got if g in set(sent)]


def _kcat_brokers(h, bootstrap, ssl):
    out = h.kcat(["-b", bootstrap, "-L", "-J"] + ssl).stdout
    import json
    return sorted("%s/%d" % (b["name"], b["id"]) for b in json.loads(out)["brokers"])


def test_kcat_produces_and_consumes_through_haproxy_tls(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    ssl = tls_lib.rdkafka_ssl(tc.certs)
    brokers = _kcat_brokers(h, tc.bootstrap, ssl)
    assert brokers == sorted("127.0.0.1:%d/%d" % (p, i) for i, p in enumerate(tc.ports, 1)), \
        (brokers, tc.ports, tc.cluster.ports)
    for partition in range(3):
        sent, got = _kcat_round(h, tc.bootstrap, ssl, "t", partition)
        assert got == sent, (partition, sent, got)
    # HAProxy saw TLS connections on every frontend.
    log = tc.haproxy_log()
    for i in range(3):
        assert "b%d~ b%d_up/s0" % (i, i) in log, log[-2000:]
    # Plaintext at a TLS port is not Kafka to it: kcat without TLS gets nothing.
    r = h.kcat(["-b", tc.bootstrap, "-L", "-m", "5"], check=False, timeout=30)
    assert r.returncode != 0, r.stdout
    # A client trusting another CA is refused by its own verification.
    r = h.kcat(["-b", tc.bootstrap, "-L", "-m", "5"] +
               tls_lib.rdkafka_ssl(tc.certs, ca=tc.certs.other_ca), check=False, timeout=30)
    assert r.returncode != 0 and "certificate verify failed" in r.stderr, r.stderr[-800:]


def test_python_clients_round_trip_through_haproxy_tls(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    for client in ("kafka-python", "confluent-kafka"):
        out = h.python_peer([client, "--bootstrap", tc.bootstrap, "--topic", "t",
                             "--messages", "300"] + tls_lib.peer_ssl(tc.certs))
        assert out["passed"] and out["returncode"] == 0, out
        if client == "kafka-python":
            assert out["brokers"] == sorted("127.0.0.1:%d" % p for p in tc.ports), out


def test_rdkafka_2_15_1_consumer_group_through_haproxy_tls(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    log = os.path.join(h.workdir, "rdkafka.log")
    s = h.rdkafka_check(["--bootstrap", tc.bootstrap, "--topic", "t", "--messages", "2000",
                         "--partitions-keyed", "--idempotent", "--consume-group", "g-tls",
                         "--debug", "broker,security", "--log-file", log] +
                        tls_lib.rdkafka_ssl(tc.certs))
    assert s["passed"], s
    text = open(log, errors="replace").read()
    assert "ssl://127.0.0.1:%d" % tc.ports[0] in text, text[-1500:]
    assert not (h.connected_ports(log) & set(tc.cluster.ports)), "dialled the plaintext mock"


def test_mtls_haproxy_requires_the_test_ca_client_certificate(h):
    tc = tls_lib.TlsCluster(h, ["t:1:1"], mtls=True)
    c = tc.certs
    r = h.kcat(["-b", tc.bootstrap, "-L", "-m", "5"] + tls_lib.rdkafka_ssl(c), check=False,
               timeout=30)
    assert r.returncode != 0 and "alert certificate required" in r.stderr, r.stderr[-800:]
    r = h.kcat(["-b", tc.bootstrap, "-L", "-m", "5"] + tls_lib.rdkafka_ssl(c, "untrusted-client"),
               check=False, timeout=30)
    assert r.returncode != 0 and "alert unknown ca" in r.stderr, r.stderr[-800:]
    sent, got = _kcat_round(h, tc.bootstrap, tls_lib.rdkafka_ssl(c, "client"), "t")
    assert got == sent
    out = h.python_peer(["kafka-python", "--bootstrap", tc.bootstrap, "--topic", "t",
                         "--messages", "100"] + tls_lib.peer_ssl(c, "client"))
    assert out["passed"], out
    # openssl s_client without a certificate: the handshake ends with an alert
    # (TLS 1.3: after the server's Finished) and no Kafka byte comes back.
    hs = tls_lib.s_client(h, tc.ports[0], ca=c.ca, send=b"\x00\x00\x00\x00")
    assert hs.alert() in ("certificate required", "handshake failure"), hs.out[-1500:]
    hs = tls_lib.s_client(h, tc.ports[0], ca=c.ca, cert=c.path("client", "crt"),
                          key=c.path("client", "key"))
    assert hs.verify_code == 0 and hs.alert() is None, hs.out[-1500:]


def test_unresolvable_broker_names_reached_with_peer_resolvers(h):
    # The brokers advertise b-N.kafka.example.com (no resolver knows them);
    # HAProxy presents *.kafka.example.com.
    names = ["b-%d.%s" % (i, tls_lib.DOMAIN) for i in (1, 2, 3)]
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    for broker_id, (name, port) in enumerate(zip(names, tc.ports), start=1):
        tc.cluster.cmd("advertise %d %s %d" % (broker_id, name, port))
    bootstrap = "%s:%d" % (names[0], tc.ports[0])
    rule = "*.%s=127.0.0.1" % tls_lib.DOMAIN
    out = h.python_peer(["kafka-python", "--bootstrap", bootstrap, "--topic", "t",
                         "--messages", "200", "--resolve", rule] + tls_lib.peer_ssl(tc.certs))
    assert out["passed"], out
    assert out["brokers"] == sorted("%s:%d" % a for a in zip(names, tc.ports)), out
    assert set(out["resolved"]) == set(names), out
    # Control: the same client without the resolver cannot reach the names.
    r = h.run([harness.TEST_PYTHON, os.path.join(tls_lib.HERE, "..", "integration",
                                                 "client_peer.py"),
               "kafka-python", "--bootstrap", bootstrap, "--topic", "t", "--messages", "1"] +
              tls_lib.peer_ssl(tc.certs), check=False, timeout=90, name="client_peer")
    assert r.returncode != 0, r.stdout
    # librdkafka 2.15.1 through its resolve_cb, TLS name verified.
    log = os.path.join(h.workdir, "rdkafka.log")
    s = h.rdkafka_check(["--bootstrap", bootstrap, "--topic", "t", "--messages", "500",
                         "--partitions-keyed", "--resolve", rule, "--debug", "broker",
                         "--log-file", log] + tls_lib.rdkafka_ssl(tc.certs))
    assert s["passed"], s
    text = open(log, errors="replace").read()
    for name, port in zip(names, tc.ports):
        assert "ssl://%s:%d" % (name, port) in text, (name, text[-1500:])


if __name__ == "__main__":
    harness.main(globals(), needs_epochgate=False)

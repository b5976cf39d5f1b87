"""Encrypted private keys and certificate expiry, end to end.

- key_password_file: epochgate serves a certificate whose key is encrypted
  (make-certs.sh server-enc.key, AES-256, the passphrase in a file) and
  presents an encrypted client key to HAProxy brokers that require client
  certificates (mTLS); librdkafka 2.15.1 produces and consumes through it
  and `openssl s_client` sees the served leaf's serial.
- A wrong passphrase: at start epochgate exits non-zero naming the key file
  and OpenSSL's reason; on a reload (the password file replaced, as a
  Secret update does) the reload is refused with the file and the reason,
  counted, and new connections still get the old certificate; the right
  passphrase back, the next reload is accepted.
- epochgate_tls_certificate_expiry_seconds{file}, read from /metrics, is the
  time to the earliest notAfter `openssl x509 -enddate` shows for that file
  (a leaf made to expire in two days, its chain, and the CA file).
"""

import calendar
import os
import re
import subprocess
import time

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402


def _leaf_serial(c, name):
    return subprocess.run(["openssl", "x509", "-in", c.path(name, "leaf.crt"), "-noout", "-serial"],
                          capture_output=True, text=True, timeout=10).stdout.strip().split("=")[1]


def _encrypted_config(h, c, password_file, name="epochgate-enc.yaml"):
    return tls_lib.write_gate_config(h, c, upstream_client="client", name=name, extra={
        "tls": {"key_file": c.path("server-enc", "key"), "key_password_file": password_file},
        "upstream_tls": {"key_file": c.path("client-enc", "key"),
                         "key_password_file": os.path.join(c.dir, "client-key-password.txt")}})


def _replace(path, text):
    with open(path + ".new", "w") as f:
        f.write(text)
    os.replace(path + ".new", path)


def test_encrypted_keys_both_sides(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"], mtls=True)
    c = tc.certs
    gate = h.start_gate(tc.bootstrap, _encrypted_config(
        h, c, os.path.join(c.dir, "server-key-password.txt")))
    hs = tls_lib.s_client(h, gate.bootstrap_address[1], ca=c.ca, verify_host="localhost")
    assert hs.verify_code == 0, hs.out[-800:]
    assert hs.leaf("serial") == _leaf_serial(c, "server")
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "t", "--messages", "500",
                         "--partitions-keyed", "--consume-group", "g-enc"] + tls_lib.rdkafka_ssl(c))
    assert s["passed"] and s["missing"] == 0, s
    # HAProxy required a client certificate: epochgate's encrypted one.
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="upstream",
                                 reason="ok") >= 1


test_encrypted_keys_both_sides.timeout = 180


def test_wrong_key_password_is_refused(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    c = tc.certs
    wrong = os.path.join(h.workdir, "wrong-password.txt")
    with open(wrong, "w") as f:
        f.write("not-the-passphrase\n")
    # At start: no TLS without its key; the file and OpenSSL's reason are named.
    args = _encrypted_config(h, c, wrong, name="epochgate-wrong.yaml")
    r = h.run([h.epochgate_path, "--bootstrap", tc.bootstrap, "--listen", "127.0.0.1:0",
               "--broker-port-base", "0", "--advertise-host", "127.0.0.1",
               "--admin", "127.0.0.1:0"] + args, timeout=30, check=False, name="epochgate-wrong")
    text = r.stdout + r.stderr
    assert r.returncode != 0, text[-800:]
    assert c.path("server-enc", "key") in text, text[-800:]
    assert "bad decrypt" in text, text[-800:]  # OpenSSL's reason
    # On reload: the password file changes to a wrong passphrase.
    password = os.path.join(h.workdir, "server-key-password.txt")
    right = open(os.path.join(c.dir, "server-key-password.txt")).read()
    with open(password, "w") as f:
        f.write(right)
    gate = h.start_gate(tc.bootstrap, _encrypted_config(h, c, password))
    port = gate.bootstrap_address[1]
    served = _leaf_serial(c, "server")
    refused = tls_lib.metrics_value(gate, "epochgate_tls_reloads_total", result="refused")
    _replace(password, "not-the-passphrase\n")
    harness.wait_until(lambda: tls_lib.metrics_value(gate, "epochgate_tls_reloads_total",
                                                     result="refused") > refused, 15,
                       what="the reload with a wrong passphrase refused")
    # The log line is written by another thread than the one serving
    # /metrics: look for it until it is there (bounded), then check it.
    def refusal_lines():
        log = open(gate.proc.log_path, errors="replace").read()
        return [l for l in log.splitlines() if "refused" in l and "server-enc.key" in l]
    harness.wait_until(refusal_lines, 5, what="the refused reload's log line")
    line = refusal_lines()
    assert line and "bad decrypt" in line[-1], open(gate.proc.log_path, errors="replace").read()[-1500:]
    hs = tls_lib.s_client(h, port, ca=c.ca, verify_host="localhost")
    assert hs.verify_code == 0 and hs.leaf("serial") == served, hs.out[-800:]
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "t", "--messages", "100"]
                        + tls_lib.rdkafka_ssl(c))
    assert s["passed"], s
    ok = tls_lib.metrics_value(gate, "epochgate_tls_reloads_total", result="ok")
    _replace(password, right)
    harness.wait_until(lambda: tls_lib.metrics_value(gate, "epochgate_tls_reloads_total",
                                                     result="ok") > ok, 15,
                       what="the reload with the right passphrase accepted")


test_wrong_key_password_is_refused.timeout = 180


def _not_after_unix(pem_file):
    """Earliest notAfter of every certificate in `pem_file`, by `openssl x509 -enddate`."""
    text = open(pem_file).read()
    found = []
    for pem in re.findall(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", text, re.S):
        out = subprocess.run(["openssl", "x509", "-noout", "-enddate"], input=pem,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        when = out.split("=", 1)[1]  # e.g. "Dec  3 16:00:00 2026 GMT"
        found.append(calendar.timegm(time.strptime(" ".join(when.split()), "%b %d %H:%M:%S %Y %Z")))
    assert found, pem_file
    return min(found)


def test_expiry_gauge_matches_the_certificates(h):
    tc = tls_lib.TlsCluster(h, ["t:1:1"])
    c = tc.certs
    end = time.gmtime(time.time() + 2 * 86400)
    c.leaf("soon", "--cn", "localhost", "--san", "DNS:localhost,IP:127.0.0.1",
           "--end", time.strftime("%Y%m%d%H%M%SZ", end))
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, c, cert="soon",
                                                                client_auth="requested"))
    hs = tls_lib.s_client(h, gate.bootstrap_address[1], ca=c.ca, verify_host="localhost")
    assert hs.verify_code == 0, hs.out[-800:]
    assert hs.leaf("serial") == _leaf_serial(c, "soon")
    body = gate.metrics()
    gauges = {}
    for m in re.finditer(r'^epochgate_tls_certificate_expiry_seconds\{file="([^"]+)"\} (\S+)$',
                         body, re.M):
        gauges[m.group(1)] = float(m.group(2))
    now = time.time()
    for f in (c.path("soon", "crt"), c.ca):
        assert f in gauges, (f, gauges)
        want = _not_after_unix(f) - now
        # The gauge is recomputed every 10 s; allow that plus the scrape.
        assert abs(gauges[f] - want) <= 15, (f, gauges[f], want)
    assert abs(gauges[c.path("soon", "crt")] - 2 * 86400) <= 120, gauges
    assert gauges[c.ca] > gauges[c.path("soon", "crt")] + 86400, gauges  # the CA lives longer


test_expiry_gauge_matches_the_certificates.timeout = 120


if __name__ == "__main__":
    harness.main(globals())

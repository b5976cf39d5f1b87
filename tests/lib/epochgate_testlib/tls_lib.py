"""Shared pieces of the TLS tests (tests/tls).

Owns: a TLS Kafka cluster for a test (the plaintext mock cluster behind
Debian's HAProxy, one TLS frontend per broker, each broker advertising its
frontend), the client options each independent peer needs for TLS (kcat and
epochgate-rdkafka-check: librdkafka properties; kafka-python and
confluent-kafka: client_peer.py flags), epochgate's TLS configuration file
(the documented `tls` and `upstream_tls` keys), and what `openssl s_client`
shows a peer. Must never bind anything but 127.0.0.1 port 0 (the harness and
tools/tls/tls_rig.py do the binding) and never wait without a deadline.
"""

import json
import os
import re
import subprocess

from . import load_tool, test_area

# The TLS tests' folder.
HERE = test_area("tls")
from . import harness  # noqa: E402
tls_rig = load_tool("tools/tls/tls_rig.py")

DOMAIN = tls_rig.DEFAULT_DOMAIN
SNI_PATTERN = "b-$(nodeId)." + DOMAIN
SNI_BOOTSTRAP = "bootstrap." + DOMAIN


def certs(h, rsa=False):
    """The standard certificate set, made fresh in this test's work dir."""
    try:
        return tls_rig.make_certs(os.path.join(h.workdir, "certs"), rsa=rsa)
    except RuntimeError as e:
        raise AssertionError(str(e))


class TlsCluster:
    """The mock cluster with HAProxy TLS listeners in front of each broker:
    what a client sees is a TLS Kafka cluster (Metadata names the TLS ports).
    mtls=True: HAProxy requires a client certificate signed by the test CA.
    cert: the certificate set name HAProxy presents.
    advertise_host: the host name each broker advertises (its certificate
    must name it unless the test wants a mismatch)."""

    def __init__(self, h, topics=(), brokers=3, c=None, mtls=False, cert="server",
                 advertise_host=harness.LOOPBACK):
        self.certs = c or certs(h)
        self.cluster = h.start_cluster(brokers, topics)
        try:
            self.rig = tls_rig.broker_fronts(h.workdir, self.certs, self.cluster.addresses,
                                             client_ca=self.certs.ca if mtls else None, cert=cert)
        except RuntimeError as e:
            if "not installed" in str(e):
                raise harness.Skip(str(e))
            raise
        h.on_close(self.rig.stop)
        for broker_id, (_, port) in enumerate(self.rig.addresses, start=1):
            self.cluster.cmd("advertise %d %s %d" % (broker_id, advertise_host, port))
        self.addresses = [(advertise_host, p) for p in self.rig.ports]
        self.bootstrap = ",".join("%s:%d" % a for a in self.addresses)
        self.ports = self.rig.ports

    def haproxy_log(self):
        return open(self.rig.log_path, errors="replace").read()


def rdkafka_ssl(c, client=None, ca=None, key_password=False):
    """librdkafka properties (kcat -X, rdkafka-check -X) for TLS with the
    set's CA, and with `client` (a set name) as the client certificate."""
    props = ["security.protocol=ssl", "ssl.ca.location=" + (ca or c.ca)]
    if client:
        key = c.path(client, "key")
        props += ["ssl.certificate.location=" + c.path(client, "crt"),
                  "ssl.key.location=" + key]
    out = []
    for p in props:
        out += ["-X", p]
    return out


def peer_ssl(c, client=None):
    """client_peer.py flags for TLS (kafka-python, confluent-kafka)."""
    args = ["--ssl-ca", c.ca]
    if client:
        args += ["--ssl-cert", c.path(client, "crt"), "--ssl-key", c.path(client, "key")]
    return args


def write_gate_config(h, c, client_tls=True, client_auth="none", upstream_tls=True,
                      upstream_client=None, cert="server", sni=False, extra=None,
                      name="epochgate-tls.yaml"):
    """epochgate's configuration file for TLS, with the documented keys.
    Returns the ["--config", path] arguments. JSON is valid YAML."""
    doc = {}
    if client_tls:
        doc["tls"] = {"cert_file": c.path(cert, "crt"), "key_file": c.path(cert, "key"),
                      "client_auth": client_auth}
        if client_auth != "none":
            doc["tls"]["client_ca_file"] = c.ca
        if sni:
            doc["tls"]["sni"] = {"broker_host_pattern": SNI_PATTERN,
                                 "bootstrap_host": SNI_BOOTSTRAP}
    if upstream_tls:
        doc["upstream_tls"] = {"enabled": True, "ca_file": c.ca, "verify_hostname": True}
        if upstream_client:
            doc["upstream_tls"]["cert_file"] = c.path(upstream_client, "crt")
            doc["upstream_tls"]["key_file"] = c.path(upstream_client, "key")
    for key, value in (extra or {}).items():
        doc.setdefault(key, {}).update(value) if isinstance(value, dict) else doc.update({key: value})
    path = os.path.join(h.workdir, name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
    return ["--config", path]


class Handshake:
    """What `openssl s_client` saw: rc, the text, the verify result, the
    peer's leaf certificate (subject, serial) when one was sent."""

    def __init__(self, result):
        self.rc = result.returncode
        self.out = result.stdout + result.stderr
        m = re.search(r"Verify return code: (\d+) \(([^)]*)\)", self.out)
        self.verify_code = int(m.group(1)) if m else None
        self.verify_text = m.group(2) if m else None
        m = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", self.out, re.S)
        self.leaf_pem = m.group(0) if m else None
        self.protocol = (re.search(r"Protocol\s*:\s*(\S+)", self.out) or
                         re.search(r"New, (TLSv[\d.]+)", self.out))
        self.protocol = self.protocol.group(1) if self.protocol else None
        self.no_peer_cert = "no peer certificate available" in self.out

    def leaf(self, field):
        """`openssl x509 -noout -FIELD` of the peer's leaf (subject, serial)."""
        if not self.leaf_pem:
            return None
        r = subprocess.run(["openssl", "x509", "-noout", "-" + field], input=self.leaf_pem,
                           capture_output=True, text=True, timeout=10)
        return r.stdout.strip().split("=", 1)[-1].strip()

    def alert(self):
        """The TLS alert text openssl printed (e.g. 'certificate required'), or None."""
        m = re.search(r"alert ([a-z ]+?)(?::|\n|$)", self.out)
        return m.group(1).strip() if m else None


def s_client(h, port, ca=None, servername=None, cert=None, key=None, verify_host=None,
             send=b"", timeout=20.0, extra=(), linger_s=1.5):
    """One `openssl s_client` handshake to 127.0.0.1:port (-showcerts), then
    `send` on the TLS connection and EOF. Returns a Handshake."""
    argv = ["openssl", "s_client", "-connect", "%s:%d" % (harness.LOOPBACK, port),
            "-showcerts", "-no_ign_eof"]
    if ca:
        argv += ["-CAfile", ca, "-verify_return_error"]
    if servername:
        argv += ["-servername", servername]
    else:
        argv += ["-noservername"]
    if verify_host:
        argv += ["-verify_hostname", verify_host]
    if cert:
        argv += ["-cert", cert, "-key", key]
    argv += list(extra)
    # stdin stays open a moment after `send`: with TLS 1.3 the server judges
    # the client's certificate after the client's Finished, so its alert
    # arrives after s_client thinks the handshake is done.
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=False)
    try:
        try:
            proc.stdin.write(send)
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # s_client already gave up: its output says why
        try:
            proc.wait(timeout=linger_s)
        except subprocess.TimeoutExpired:
            pass
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
    with open(os.path.join(h.workdir, "commands.log"), "a") as f:
        f.write("$ %s\n%s%s\n" % (" ".join(argv), out.decode(errors="replace"),
                                   err.decode(errors="replace")))
    return Handshake(subprocess.CompletedProcess(argv, proc.returncode,
                                                 out.decode(errors="replace"),
                                                 err.decode(errors="replace")))


def metrics_value(gate, name, **labels):
    """Sum of samples of `name` whose labels include `labels` (0 if none)."""
    from . import prom_text
    return prom_text.metric(gate.metrics(), name, **labels)

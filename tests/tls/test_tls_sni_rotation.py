"""One-port SNI routing and certificate rotation, seen by independent clients.

- SNI: epochgate serves the bootstrap and every broker on one TLS port and
  advertises each broker as b-<node id>.kafka.example.com on that port. No
  resolver knows those names, and no /etc/hosts is touched: kafka-python
  runs with client_peer.py --resolve (its own getaddrinfo answers the names
  with 127.0.0.1) and librdkafka 2.15.1 with rdkafka-check --resolve
  (librdkafka's resolve_cb); both still send the name as SNI and verify it
  against the certificate (*.kafka.example.com). Metadata and the leader
  hints name the host names; `openssl s_client -servername` shows a name no
  node has refused with a handshake failure, and epochgate's log names it.
- Rotation: the certificate and key files are replaced under a steady
  librdkafka producer and consumer: nothing is lost or duplicated, and new
  connections present the new certificate (`openssl s_client -showcerts`:
  the new serial), on a file change and on SIGHUP. A key that does not match
  its certificate is refused and the old certificate stays in use.
"""

import os
import shutil
import signal
import time

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402

RESOLVE = "*.%s=127.0.0.1" % tls_lib.DOMAIN


def _sni_gate(h, tc):
    return h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, tc.certs, sni=True))


def test_sni_one_port_with_name_resolving_clients(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    gate = _sni_gate(h, tc)
    port = gate.bootstrap_address[1]
    bootstrap = "%s:%d" % (tls_lib.SNI_BOOTSTRAP, port)
    out = h.python_peer(["kafka-python", "--bootstrap", bootstrap, "--topic", "t",
                         "--messages", "300", "--resolve", RESOLVE] + tls_lib.peer_ssl(tc.certs))
    assert out["passed"], out
    want = sorted("b-%d.%s:%d" % (n, tls_lib.DOMAIN, port) for n in (1, 2, 3))
    assert out["brokers"] == want, (out["brokers"], want)
    assert set(out["resolved"]) >= set(w.rsplit(":", 1)[0] for w in want), out
    log = os.path.join(h.workdir, "rdkafka.log")
    s = h.rdkafka_check(["--bootstrap", bootstrap, "--topic", "t", "--messages", "2000",
                         "--partitions-keyed", "--consume-group", "g-sni", "--resolve", RESOLVE,
                         "--debug", "broker", "--log-file", log] + tls_lib.rdkafka_ssl(tc.certs))
    assert s["passed"], s
    text = open(log, errors="replace").read()
    for n in (1, 2, 3):
        assert "ssl://b-%d.%s:%d" % (n, tls_lib.DOMAIN, port) in text, text[-1200:]
    assert h.connected_ports(log) == {port}, h.connected_ports(log)
    # Each name reaches its node: s_client with the name gets the certificate
    # and an ApiVersions answer; an unknown name is refused, and logged.
    hs = tls_lib.s_client(h, port, ca=tc.certs.ca, servername="b-2." + tls_lib.DOMAIN,
                          verify_host="b-2." + tls_lib.DOMAIN)
    assert hs.verify_code == 0, hs.out[-800:]
    hs = tls_lib.s_client(h, port, ca=tc.certs.ca, servername="nobody." + tls_lib.DOMAIN)
    assert hs.rc != 0 and ("unrecognized name" in hs.out or "handshake failure" in hs.out), \
        hs.out[-800:]
    harness.wait_until(lambda: "nobody." + tls_lib.DOMAIN in open(gate.proc.log_path).read(), 5,
                       what="a log line naming the unknown server name")
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="client",
                                 reason="unknown_server_name") >= 1


test_sni_one_port_with_name_resolving_clients.timeout = 240


def _serial(h, port, c):
    hs = tls_lib.s_client(h, port, ca=c.ca, verify_host="localhost")
    assert hs.verify_code == 0, hs.out[-800:]
    return hs.leaf("serial")


def _install(c, name, target="server"):
    """Atomically replaces the set's `target` certificate and key with
    `name`'s (rename, as a Kubernetes Secret update swaps its files)."""
    for kind in ("crt", "key"):
        tmp = c.path(target, kind) + ".new"
        shutil.copyfile(c.path(name, kind), tmp)
        os.replace(tmp, c.path(target, kind))


def _leaf_serial(c, name):
    import subprocess
    return subprocess.run(["openssl", "x509", "-in", c.path(name, "leaf.crt"), "-noout", "-serial"],
                          capture_output=True, text=True, timeout=10).stdout.strip().split("=")[1]


def test_rotation_during_steady_produce(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    c = tc.certs
    c.leaf("rotated-1", "--cn", "localhost")
    c.leaf("rotated-2", "--cn", "localhost")
    c.leaf("other-key", "--cn", "localhost")
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, c))
    port = gate.bootstrap_address[1]
    first = _serial(h, port, c)
    assert first == _leaf_serial(c, "server")
    check = h.rdkafka_check_async(
        ["--bootstrap", gate.bootstrap, "--topic", "t", "--partitions-keyed", "--idempotent",
         "--duration-s", "10", "--rate", "400", "--concurrent", "--consume-group", "g-rot"] +
        tls_lib.rdkafka_ssl(c))
    time.sleep(2)
    _install(c, "rotated-1")  # file watch
    want = _leaf_serial(c, "rotated-1")
    harness.wait_until(lambda: _serial(h, port, c) == want, 15,
                       what="the rotated certificate on a new connection")
    time.sleep(1)
    _install(c, "rotated-2")
    gate.proc.proc.send_signal(signal.SIGHUP)  # and SIGHUP
    want = _leaf_serial(c, "rotated-2")
    harness.wait_until(lambda: _serial(h, port, c) == want, 15, what="the SIGHUP reload")
    # A key that does not belong to the certificate is refused: the old pair
    # stays. (The two renames above may each have been seen alone: count from here.)
    time.sleep(1)
    refused = tls_lib.metrics_value(gate, "epochgate_tls_reloads_total", result="refused")
    shutil.copyfile(c.path("other-key", "key"), c.path("server", "key") + ".new")
    os.replace(c.path("server", "key") + ".new", c.path("server", "key"))
    gate.proc.proc.send_signal(signal.SIGHUP)
    harness.wait_until(lambda: tls_lib.metrics_value(gate, "epochgate_tls_reloads_total",
                                                     result="refused") > refused, 15,
                       what="a refused reload")
    assert _serial(h, port, c) == want
    s = check.result(timeout=90)
    assert s["passed"] and s["missing"] == 0 and s["duplicates"] == 0, s
    log = open(gate.proc.log_path, errors="replace").read()
    assert c.path("server", "key") in log, "the refused reload does not name the file"


test_rotation_during_steady_produce.timeout = 200


if __name__ == "__main__":
    harness.main(globals())

"""One-port SNI routing reaches only the cluster's nodes, seen by independent clients.

The broker host pattern (b-$(nodeId).kafka.example.com) makes a name for
every number; only the nodes the cluster's metadata names are brokers.
- `openssl s_client -servername b-99...` (node 99 does not exist) is refused
  at the handshake (unrecognized_name alert); epochgate's log names the name
  received and the metric counts reason `unknown_node`. kafka-python
  bootstrapping from that name gets no broker at all. The bootstrap name and
  existing nodes' names still complete.
- A node the cluster gains later (the mock's `add-broker 4`) is refused
  before and routable after epochgate's refresher saw it: a Kafka request
  over TLS with SNI b-4... is answered by broker 4 itself (the mock's
  request tracking says which broker served it).
"""

import os
import ssl

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402

RESOLVE = "*.%s=127.0.0.1" % tls_lib.DOMAIN


def _name(node):
    return "b-%d.%s" % (node, tls_lib.DOMAIN)


def _refused(hs):
    """s_client got an unrecognized_name alert and no certificate."""
    return hs.rc != 0 and hs.no_peer_cert and "unrecognized name" in hs.out


def _served(hs):
    """s_client finished a handshake with a verified certificate."""
    return hs.leaf_pem is not None and hs.verify_code == 0 and not _refused(hs)


def test_pattern_name_of_a_missing_node_is_refused(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, tc.certs, sni=True))
    port = gate.bootstrap_address[1]
    harness.wait_until(lambda: _served(tls_lib.s_client(h, port, ca=tc.certs.ca,
                                                        servername=_name(3), linger_s=0.3)),
                       15, interval=0.5, what="epochgate's view naming node 3")
    hs = tls_lib.s_client(h, port, ca=tc.certs.ca, servername=_name(99))
    assert _refused(hs), hs.out[-800:]
    harness.wait_until(lambda: _name(99) in open(gate.proc.log_path, errors="replace").read(), 5,
                       what="a log line naming b-99")
    line = [l for l in open(gate.proc.log_path, errors="replace") if _name(99) in l][0]
    assert "node 99" in line and "metadata" in line, line
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="client",
                                 reason="unknown_node") >= 1
    # A real client given that name: kafka-python's TLS handshake fails with
    # the alert (its own words), and nothing is produced.
    r = h.run([harness.TEST_PYTHON, os.path.join(harness.HERE, "client_peer.py"), "kafka-python",
               "--bootstrap", "%s:%d" % (_name(99), port), "--topic", "t", "--messages", "1",
               "--resolve", RESOLVE] + tls_lib.peer_ssl(tc.certs), timeout=60, check=False,
              name="client_peer")
    assert r.returncode != 0 and '"passed": true' not in r.stdout, r.stdout
    assert "UNRECOGNIZED_NAME" in r.stderr.upper().replace(" ", "_"), r.stderr[-800:]
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="client",
                                 reason="unknown_node") >= 2
    # The bootstrap name and the nodes that exist still complete.
    for name in (tls_lib.SNI_BOOTSTRAP, _name(1), _name(3)):
        hs = tls_lib.s_client(h, port, ca=tc.certs.ca, servername=name, verify_host=name)
        assert _served(hs), (name, hs.out[-800:])
    out = h.python_peer(["kafka-python", "--bootstrap", "%s:%d" % (tls_lib.SNI_BOOTSTRAP, port),
                         "--topic", "t", "--messages", "50", "--resolve", RESOLVE]
                        + tls_lib.peer_ssl(tc.certs))
    assert out["passed"], out


test_pattern_name_of_a_missing_node_is_refused.timeout = 180


def test_node_added_later_becomes_routable(h):
    # Client-facing TLS only, so broker 4 (plaintext, the mock's own port) is
    # reachable as soon as epochgate knows it.
    c = tls_lib.certs(h)
    cluster = h.start_cluster(3, ["t:3:1"])
    gate = h.start_gate(cluster.bootstrap, tls_lib.write_gate_config(
        h, c, sni=True, upstream_tls=False, extra={"refresher": {"interval_ms": 300}}))
    port = gate.bootstrap_address[1]
    hs = tls_lib.s_client(h, port, ca=c.ca, servername=_name(4))
    assert _refused(hs), hs.out[-800:]
    cluster.cmd("add-broker 4")
    harness.wait_until(
        lambda: _served(tls_lib.s_client(h, port, ca=c.ca, servername=_name(4),
                                         verify_host=_name(4), linger_s=0.3)),
        20, interval=0.5, what="b-4 routable once the refresher saw node 4")
    from epochgate_testlib import kafka_wire as kw
    cluster.cmd("track start")
    cluster.cmd("track clear")
    conn = kw.Connection(harness.LOOPBACK, port, tls=ssl.create_default_context(cafile=c.ca),
                         server_name=_name(4))
    try:
        conn.send(kw.metadata_request(0x5A5A, ["t"], version=1))
        answer = kw.parse_metadata_response(conn.recv_frame(), 1)
        # HeartBeat (api key 12): a request epochgate itself never sends, so
        # the mock's count on broker 4 can only be this connection's.
        conn.send(kw.heartbeat_request(0x5A5B, "g-sni-nodes"))
        conn.recv_frame()
    finally:
        conn.close()
    assert 4 in answer["brokers"], answer
    assert answer["brokers"][4][0] == _name(4), answer
    dump = cluster.cmd("track dump")
    # The mock's tracking: "broker:api_key=count".
    assert "4:12=1" in dump, dump


test_node_added_later_becomes_routable.timeout = 120


if __name__ == "__main__":
    harness.main(globals())

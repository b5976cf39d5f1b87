"""SASL and TLS against the real brokers' own security: each broker of the
module's cluster (security=True) has SASL_PLAINTEXT and SASL_SSL listeners
with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (users made through the Admin
API) and a certificate from the openssl command line. The Java client
(kafka-clients 4.4.0, SaslHandshake v1 + SaslAuthenticate), librdkafka
2.15.1 (the same framing) and kafka-python 2.0.2 (SaslHandshake v0, then raw
tokens) log in through epochgate in each of its SASL modes, with the same
clients and credentials straight at the listeners as the control, in the
same run:

- passthrough: the clients' own logins pass through; epochgate logs in for
  its refresher (`upstream_sasl`), or not at all (the brokers then close its
  Metadata request and it learns the cluster from the clients' traffic);
- sidecar credential mode (`upstream_sasl.on_behalf_of_clients`): clients
  connect without SASL and epochgate logs each session in.

Under each mechanism and client: an idempotent producer (acks=all) whose
partition 0 leader moves halfway (reorder + PREFERRED election through the
PLAINTEXT listener), and a consumer group that reads back exactly what was
acknowledged. Through epochgate every client connection goes to its ports.

These replace tools/sasl_gate/ as the proof of SASL against a broker; the
gate stays in tests/integration for what a real broker cannot be made to do
(a short KIP-368 session lifetime on demand, OAUTHBEARER unsecured tokens).
Imported by a test module that starts its cluster with rk.SECURITY = True.
"""

import json
import os
import socket
import ssl
import threading
import time

from epochgate_testlib import realkafka_lib as rk
from epochgate_testlib.realkafka_lib import harness, kw, sl, sw

USER, PASSWORD = "alice", "alice-secret"
OWN_USER, OWN_PASSWORD = "epochgate", "epochgate-secret"
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
JAVA_RECORDS = 400
RD_SECONDS = 6
RD_RATE = 100


def _java_props(h, c, name, protocol, mechanism):
    """A Java client properties file; protocol None: no security settings."""
    path = os.path.join(h.workdir, name + ".properties")
    lines = []
    if protocol:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        lines += ["security.protocol=" + protocol, "sasl.mechanism=" + mechanism,
                  'sasl.jaas.config=%s required username="%s" password="%s";' % (module, USER, PASSWORD)]
        if protocol == "SASL_SSL":
            lines += ["ssl.truststore.type=PEM", "ssl.truststore.location=" + c.ca_file]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def _rd_props(c, protocol, mechanism, password=PASSWORD):
    if not protocol:
        return []
    args = ["-X", "security.protocol=" + protocol, "-X", "sasl.mechanism=" + mechanism,
            "-X", "sasl.username=" + USER, "-X", "sasl.password=" + password]
    if protocol == "SASL_SSL":
        args += ["-X", "ssl.ca.location=" + c.ca_file]
    return args


def _gate(h, c, protocol, own_login=None, on_behalf=False, client_tls=False):
    """epochgate in front of the `protocol` listeners. own_login: the
    mechanism of epochgate's own login (upstream_sasl), None for none."""
    cfg = "refresher:\n  interval_ms: 2000\n"
    if client_tls:
        cfg += "tls:\n  cert_file: %s\n  key_file: %s\n" % (
            os.path.join(c.tls_dir, "server.crt"), os.path.join(c.tls_dir, "server.key"))
    if protocol == "SASL_SSL":
        cfg += "upstream_tls:\n  enabled: true\n  ca_file: %s\n" % c.ca_file
    if own_login:
        pw = os.path.join(h.workdir, "upstream-password")
        user, secret = (USER, PASSWORD) if on_behalf else (OWN_USER, OWN_PASSWORD)
        with open(pw, "w") as f:
            f.write(secret + "\n")
        cfg += "upstream_sasl:\n  mechanism: %s\n  username: %s\n  password_file: %s\n" % (
            own_login, user, pw)
        if on_behalf:
            cfg += "  on_behalf_of_clients: true\n"
    return sl.start_gate(h, None, upstream=c.listener_bootstrap(protocol), config=cfg)


def _java_stories(h, c, bootstrap, stories, name):
    """One JVM runs every (props, topic, group) story at once; each moves its
    topic's partition 0 leader halfway. Returns ({topic: result}, ports)."""
    spec = ",".join("%s@%s@%s" % s for s in stories)
    out, ports = rk.driver(h, c, ["stories", "--bootstrap", bootstrap, "--count", str(JAVA_RECORDS),
                                  "--mover", c.bootstrap, "--stories", spec], name, timeout=200)
    return {s["topic"]: s for s in out["stories"]}, ports


def _assert_java(story, what):
    assert "exception" not in story, "%s: %s" % (what, story)
    assert story["acked"] == JAVA_RECORDS and story["errors"] == 0, "%s: %s" % (what, story)
    assert story["consumed"] == story["acked"] and story["missing"] == 0, "%s: %s" % (what, story)
    assert story["duplicates"] == 0 and story["offset_mismatch"] == 0, "%s: %s" % (what, story)
    assert story["move"].startswith("moved:"), "%s: no leader move (%s)" % (what, story["move"])


def _rd_start(h, c, bootstrap, topic, group, props, name):
    log = os.path.join(h.workdir, name + ".log")
    check = h.rdkafka_check_async([
        "--bootstrap", bootstrap, "--topic", topic, "--partitions-keyed", "--idempotent", "--acks", "all",
        "--duration-s", str(RD_SECONDS), "--rate", str(RD_RATE), "--concurrent", "--consume-group", group,
        "--debug", "broker", "--log-file", log] + props, name=name)
    return check, log


def _assert_rd(s, what):
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, (what, s)
    assert s["failed"] == 0 and s["acked"] == s["produced"] > 0, (what, s)


def _run_matrix(h, c, gate, protocol, mechanisms, tag, gate_needs_sasl=True):
    """Java and librdkafka, direct and through `gate`, one story per
    mechanism, all at once; partition 0 of every topic moves halfway."""
    java, rd, topics = {}, {}, []
    for mode in ("direct", "gate"):
        stories = []
        for m in mechanisms:
            t = rk.create_topic(c, "%s-j-%s-%s" % (tag, mode, m.lower()))
            gate_props = protocol if (mode == "direct" or gate_needs_sasl) else None
            stories.append((_java_props(h, c, "%s-%s-%s" % (tag, mode, m), gate_props and protocol, m),
                            t, "g-" + t))
        java[mode] = stories
        for m in mechanisms:
            t = rk.create_topic(c, "%s-r-%s-%s" % (tag, mode, m.lower()))
            topics.append(t)
            rd[(mode, m)] = t
    bootstraps = {"direct": c.listener_bootstrap(protocol), "gate": gate.bootstrap}
    before = sl.scrape(gate)
    # librdkafka in the background; the Java stories move their own leaders.
    checks = {}
    for (mode, m), t in rd.items():
        use_sasl = mode == "direct" or gate_needs_sasl
        checks[(mode, m)] = _rd_start(h, c, bootstraps[mode], t, "g-" + t,
                                      _rd_props(c, protocol, m) if use_sasl else [],
                                      "rd-%s-%s-%s" % (tag, mode, m))
    java_out = {}

    def run_java(mode):
        try:
            java_out[mode] = _java_stories(h, c, bootstraps[mode], java[mode], "java-%s-%s" % (tag, mode))
        except BaseException as e:  # re-raised below, on the test's thread
            java_out[mode] = e

    threads = [threading.Thread(target=run_java, args=(mode,)) for mode in ("direct", "gate")]
    for t in threads:
        t.start()
    time.sleep(RD_SECONDS / 2.0)
    rd_moves = []
    for t in topics:
        leader = rk.leaders(c, [t])[(t, 0)][0]
        rd_moves.append(c.ctl("move %s 0 %d" % (t, 1 + leader % 3))["ms"])
    for t in threads:
        t.join(timeout=240)
    results = {k: chk.result(timeout=RD_SECONDS + 120, expect_pass=False) for k, (chk, _) in checks.items()}
    after = sl.scrape(gate)
    # Through epochgate: its bootstrap, never a broker's port (any listener).
    upstream = set(c.listener_ports("SASL_SSL")) | set(c.listener_ports("SASL_PLAINTEXT")) | set(c.broker_ports)

    def assert_gate_side(ports, what):
        assert ports, "%s: no connection seen in the client's log" % what
        assert gate.bootstrap_address[1] in ports and not ports & upstream, (
            "%s connected to %s; upstream ports %s" % (what, sorted(ports), sorted(upstream)))

    for mode in ("direct", "gate"):
        if isinstance(java_out[mode], BaseException):
            raise java_out[mode]
        stories, ports = java_out[mode]
        for (_, topic, _) in java[mode]:
            _assert_java(stories[topic], "java %s %s" % (mode, topic))
        if mode == "gate":
            assert_gate_side(ports, "java through epochgate (%s)" % tag)
        else:
            rk.assert_ports(ports, c.listener_ports(protocol), upstream, "java direct (%s)" % tag)
    for (mode, m), s in results.items():
        _assert_rd(s, "librdkafka %s %s %s" % (tag, mode, m))
        got = h.connected_ports(checks[(mode, m)][1])
        if mode == "gate":
            assert_gate_side(got, "librdkafka through epochgate %s" % m)
        else:
            assert got and got <= set(c.listener_ports(protocol)), "librdkafka direct %s dialled %s" % (m, got)
    h.note("%s: Java %d records x %d mechanisms and librdkafka %d s at %d msg/s x %d, direct and through "
           "epochgate, a move of partition 0 under each (librdkafka moves %s ms): nothing lost, duplicated "
           "or misplaced; latency max librdkafka direct %s / epochgate %s ms" % (
               tag, JAVA_RECORDS, len(mechanisms), RD_SECONDS, RD_RATE, len(mechanisms),
               [round(x) for x in rd_moves],
               [round(results[("direct", m)]["latency_ms"]["max"]) for m in mechanisms],
               [round(results[("gate", m)]["latency_ms"]["max"]) for m in mechanisms]))
    return before, after


def _logins(after, before, side, mechanism, result="ok"):
    return sl.delta(after, before, "epochgate_sasl_authentications_total", side=side,
                    mechanism=mechanism, result=result)


def test_sasl_ssl_passthrough_with_own_login(h):
    """SASL_SSL brokers, TLS on both sides of epochgate; epochgate logs its
    refresher in with SCRAM-SHA-512 as its own principal, and every client
    login (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) passes through."""
    c = rk.cluster(h)
    gate = _gate(h, c, "SASL_SSL", own_login="SCRAM-SHA-512", client_tls=True)
    before, after = _run_matrix(h, c, gate, "SASL_SSL", MECHANISMS, "ssl-pass")
    for m in MECHANISMS:
        assert _logins(after, before, "passthrough", m) > 0, "no %s login passed through" % m
        assert _logins(after, before, "passthrough", m, "failed") == 0, m
    assert after.sum("epochgate_sasl_authentications_total", side="own",
                     mechanism="SCRAM-SHA-512", result="ok") >= 1
    assert gate.http_get("/readyz")[0] == 200
    topic = "ssl-pass-r-gate-plain"
    h.note("epochgate's view after the moves matched the cluster within %.2f s" % rk.wait_view_matches(
        gate, c, [topic], timeout=5.2))
    # A wrong password fails the same way both ways, and epochgate counts
    # the refused login it passed through.
    mark = sl.scrape(gate)
    wrong = {}
    for mode, bootstrap in (("direct", c.listener_bootstrap("SASL_SSL")), ("gate", gate.bootstrap)):
        wrong[mode] = h.rdkafka_check_async(
            ["--bootstrap", bootstrap, "--topic", topic, "--messages", "1", "--produce-timeout-s", "4",
             "--no-warmup"] + _rd_props(c, "SASL_SSL", "SCRAM-SHA-256", "wrong"), name="rd-wrong-" + mode)
    errs = {}
    for mode, chk in wrong.items():
        s = chk.result(timeout=40, expect_pass=False)
        assert not s["passed"] and s["acked"] == 0, (mode, s)
        errs[mode] = s["first_error"]
    assert errs["direct"] == errs["gate"], errs
    assert _logins(sl.scrape(gate), mark, "passthrough", "SCRAM-SHA-256", "failed") >= 1
    h.note("wrong password: %r both ways; epochgate counted the refused login" % errs["gate"])


def test_sasl_plaintext_passthrough_without_own_login(h):
    """SASL_PLAINTEXT brokers and no upstream_sasl: the refresher's Metadata
    is refused (the brokers close it), clients log in themselves and
    epochgate learns the cluster from their traffic. kafka-python 2.0.2 adds
    the SaslHandshake v0 raw-token framing."""
    c = rk.cluster(h)
    gate = _gate(h, c, "SASL_PLAINTEXT")
    # The refresher's first round tells sessions the brokers want SASL; a
    # client arriving before it would have its ApiVersions refused once.
    deadline = time.monotonic() + 10
    while sl.scrape(gate).sum("epochgate_metadata_refresh_errors_total", reason="closed_at_metadata") < 1:
        assert time.monotonic() < deadline, "the refresher never reported closed_at_metadata"
        time.sleep(0.1)
    before, after = _run_matrix(h, c, gate, "SASL_PLAINTEXT", ("SCRAM-SHA-256", "PLAIN"), "pt-pass")
    for m in ("SCRAM-SHA-256", "PLAIN"):
        assert _logins(after, before, "passthrough", m) > 0, m
    topic = rk.create_topic(c, "pt-kafka-python", partitions=1, config="min.insync.replicas=1")
    for mode, bootstrap in (("direct", c.listener_bootstrap("SASL_PLAINTEXT")), ("gate", gate.bootstrap)):
        r = h.run([harness.TEST_PYTHON, os.path.join(rk.ROOT, "tests", "integration", "sasl_client.py"),
                   "kafka-python", "--bootstrap", bootstrap, "--topic", topic, "--mechanism", "PLAIN",
                   "--username", USER, "--password", PASSWORD], timeout=90, check=False,
                  name="kafka-python-" + mode)
        lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
        assert lines, "kafka-python %s printed nothing: %s" % (mode, r.stderr[-800:])
        res = json.loads(lines[-1])
        assert res["passed"], "kafka-python (SaslHandshake v0, raw tokens) %s: %s" % (mode, res)
        h.note("kafka-python 2.0.2 PLAIN, raw tokens, %s: %d/%d acked and consumed" % (
            mode, res["consumed"], res["produced"]))


def test_sidecar_credentials_over_sasl_ssl(h):
    """Sidecar credential mode: the Java client and librdkafka connect to
    epochgate on loopback without SASL or TLS; epochgate logs every session
    in with SCRAM-SHA-512 over TLS. Direct, the same clients log in
    themselves (the control); without credentials direct they fail."""
    c = rk.cluster(h)
    gate = _gate(h, c, "SASL_SSL", own_login="SCRAM-SHA-512", on_behalf=True)
    before, after = _run_matrix(h, c, gate, "SASL_SSL", ("SCRAM-SHA-512",), "sidecar",
                                gate_needs_sasl=False)
    assert _logins(after, before, "on_behalf", "SCRAM-SHA-512") > 0
    assert _logins(after, before, "on_behalf", "SCRAM-SHA-512", "failed") == 0
    # The control: the same listener refuses a client that does not log in
    # (TLS, then a Metadata request straight away: the broker closes it).
    tls = ssl.create_default_context(cafile=c.ca_file)
    conn = sl.connect(("127.0.0.1", c.listener_ports("SASL_SSL")[0]), tls=tls)
    try:
        conn.send(sw.metadata_request_v12(0x4e4f, []))
        try:
            conn.recv_frame(timeout=10)
        except socket.timeout:
            raise AssertionError("a SASL_SSL listener neither answered nor closed Metadata without a login")
        except (kw.WireError, OSError):  # EOF, or the TLS layer's reset
            pass
        else:
            raise AssertionError("a SASL_SSL listener answered Metadata without a login")
    finally:
        conn.close()
    h.note("without credentials, direct: the SASL_SSL listener closed the connection at Metadata")

"""Clients' SASL authentication through epochgate, in every framing.

The embedded cluster has no SASL, so tools/sasl_gate/sasl_gate.py stands in
front of each mock broker (epochgate_testlib.sasl_cluster) (the mock advertises the gate's ports) and
authenticates as a Kafka broker's SASL listener does. Each test first
proves the gate with the independent client straight at it (good
credentials pass, wrong ones fail with the client's usual error), then runs
the same client through epochgate and requires the same outcome: the same
successes, the same failures, the same error text. The gate's event log
shows which framing each login used: kafka-python 2.0.2 sends SaslHandshake
v0 and then raw length-prefixed tokens that are not Kafka requests;
librdkafka (kcat, confluent-kafka, 2.15.1) uses SaslHandshake v1 and
SaslAuthenticate, and 2.15.1 re-authenticates on a live connection when the
session lifetime runs out (KIP-368)."""

import json
import os
import uuid

from epochgate_testlib import harness
from epochgate_testlib.sasl_cluster import PASSWORD, USER, SaslCluster, logins, sasl_args

HERE = os.path.dirname(os.path.abspath(__file__))


def kcat_round(h, bootstrap, topic, mechanism, n=20):
    """Produces n lines to partition 0 and reads them back: (sent, got)."""
    sent = ["%s-%d" % (uuid.uuid4().hex[:8], i) for i in range(n)]
    h.kcat(["-b", bootstrap, "-P", "-t", topic, "-p", "0"] + sasl_args(mechanism),
           input=("\n".join(sent) + "\n").encode())
    got = h.kcat(["-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
                  "-q"] + sasl_args(mechanism)).stdout.split()
    return sent, [g for g in got if g in set(sent)]


def kcat_failure(h, bootstrap, mechanism, password):
    """The SASL error librdkafka 2.0.2 reports for a refused login."""
    r = h.kcat(["-b", bootstrap, "-L", "-m", "5"] + sasl_args(mechanism, password),
               check=False, timeout=30)
    assert r.returncode != 0, "kcat -L succeeded with a wrong password"
    marker = "SASL authentication error: "
    lines = [l for l in r.stderr.splitlines() if marker in l]
    assert lines, "kcat printed no SASL error: %s" % r.stderr[-500:]
    return lines[0].split(marker, 1)[1].split(" (after")[0]


def python_round(h, client, bootstrap, topic, mechanism, password=PASSWORD):
    r = h.run([harness.TEST_PYTHON, os.path.join(HERE, "sasl_client.py"), client,
               "--bootstrap", bootstrap, "--topic", topic, "--mechanism", mechanism,
               "--username", USER, "--password", password], timeout=90, check=False,
              name="sasl_client")
    if r.returncode == harness.SKIP_RETURN_CODE:
        raise AssertionError("%s is not installed: %s" % (client, r.stderr.strip()[-200:]))
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    assert lines, "sasl_client printed nothing: %s" % r.stderr[-500:]
    return json.loads(lines[-1])


def epochgate_frame_errors(gate):
    from epochgate_testlib import prom_text
    return prom_text.metric(gate.metrics(), "epochgate_frame_errors_total")


def test_kafka_python_raw_token_framing(h):
    """kafka-python 2.0.2: SaslHandshake v0 then raw tokens (PLAIN, SCRAM,
    OAUTHBEARER) logs in and round-trips records through epochgate exactly as
    directly; a wrong password fails the same way."""
    sc = SaslCluster(h, ["sasl-py:1:3"])
    gate = h.start_gate(sc.bootstrap)
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"):
        mark = len(sc.events())
        direct = python_round(h, "kafka-python", sc.bootstrap, "sasl-py", mechanism)
        assert direct["passed"], "gate fixture refused a good %s login directly: %s" % (
            mechanism, direct)
        direct_logins = logins(sc.events(mark), "raw_tokens")
        assert direct_logins, "kafka-python did not use v0 raw-token framing: %s" % (
            sc.events(mark),)
        mark = len(sc.events())
        through = python_round(h, "kafka-python", gate.bootstrap, "sasl-py", mechanism)
        assert through["passed"], "%s through epochgate: %s" % (mechanism, through)
        assert logins(sc.events(mark), "raw_tokens"), "no v0 login through epochgate"
        h.note("kafka-python %s: direct %d/%d, through epochgate %d/%d acked and consumed" % (
            mechanism, direct["consumed"], direct["produced"], through["consumed"],
            through["produced"]))
    for mechanism in ("PLAIN", "SCRAM-SHA-256"):
        direct = python_round(h, "kafka-python", sc.bootstrap, "sasl-py", mechanism, "wrong")
        through = python_round(h, "kafka-python", gate.bootstrap, "sasl-py", mechanism, "wrong")
        assert not direct["passed"] and direct["acked"] == 0, direct
        assert not through["passed"] and through["acked"] == 0, through
        assert through["error_kind"] == direct["error_kind"], (direct, through)
        h.note("kafka-python %s wrong password: %s (direct and through)" % (
            mechanism, direct["error_kind"]))
    # epochgate's own count of the logins it passed through (mechanism labels
    # from the handshake; never the client's string).
    from epochgate_testlib import prom_text
    text = gate.metrics()
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"):
        assert prom_text.metric(text, "epochgate_sasl_authentications_total", side="passthrough",
                                mechanism=mechanism, result="ok") >= 1, mechanism
    for mechanism in ("PLAIN", "SCRAM-SHA-256"):
        assert prom_text.metric(text, "epochgate_sasl_authentications_total", side="passthrough",
                                mechanism=mechanism, result="failed") >= 1, mechanism
    assert epochgate_frame_errors(gate) == 0, "epochgate counted frame errors"


def test_librdkafka_saslauthenticate_framing(h):
    """kcat and confluent-kafka (librdkafka 2.0.2): SaslHandshake v1 and
    SaslAuthenticate for each mechanism, direct and through epochgate; wrong
    passwords give the same SASL error text."""
    sc = SaslCluster(h, ["sasl-rd:1:3"])
    gate = h.start_gate(sc.bootstrap)
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"):
        sent, got = kcat_round(h, sc.bootstrap, "sasl-rd", mechanism)
        assert got == sent, "gate fixture: kcat %s directly lost records" % mechanism
        sent, got = kcat_round(h, gate.bootstrap, "sasl-rd", mechanism)
        assert got == sent, "kcat %s through epochgate: sent %d, read %d" % (
            mechanism, len(sent), len(got))
    framings = {e["framing"] for e in logins(sc.events())}
    assert framings and "raw_tokens" not in framings, framings
    for mechanism in ("PLAIN", "SCRAM-SHA-512"):
        direct = kcat_failure(h, sc.bootstrap, mechanism, "wrong")
        through = kcat_failure(h, gate.bootstrap, mechanism, "wrong")
        assert through == direct, (direct, through)
        h.note("kcat %s wrong password: %r (direct and through)" % (mechanism, direct))
    for mechanism in ("PLAIN", "SCRAM-SHA-512"):
        direct = python_round(h, "confluent-kafka", sc.bootstrap, "sasl-rd", mechanism)
        through = python_round(h, "confluent-kafka", gate.bootstrap, "sasl-rd", mechanism)
        assert direct["passed"], "gate fixture: confluent-kafka %s: %s" % (mechanism, direct)
        assert through["passed"], "confluent-kafka %s through epochgate: %s" % (
            mechanism, through)
    direct = python_round(h, "confluent-kafka", sc.bootstrap, "sasl-rd", "SCRAM-SHA-256", "x")
    through = python_round(h, "confluent-kafka", gate.bootstrap, "sasl-rd", "SCRAM-SHA-256", "x")
    assert not direct["passed"] and not through["passed"], (direct, through)
    assert "Authentication failed" in (direct.get("error") or ""), direct
    assert through["error_kind"] == direct["error_kind"], (direct, through)
    assert epochgate_frame_errors(gate) == 0, "epochgate counted frame errors"


def test_reauthentication_during_steady_produce(h):
    """librdkafka 2.15.1 re-authenticates (KIP-368) on its live connections
    when the gate's 2 s session lifetime runs out, with produce requests
    pipelined around the re-login; through epochgate nothing is lost or
    duplicated and no connection is closed for an expired session."""
    sc = SaslCluster(h, ["sasl-reauth:2:3"], lifetime_ms=2000)
    gate = h.start_gate(sc.bootstrap)
    props = []
    for kv in sasl_args("SCRAM-SHA-256")[1::2]:
        props += ["-X", kv]
    summary = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "sasl-reauth",
                               "--acks", "all", "--idempotent", "--rate", "300",
                               "--duration-s", "7", "--consume-group", "g-reauth"] + props,
                              timeout=90)
    events = sc.events()
    again = [e for e in logins(events) if e.get("reauthentication")]
    expired = [e for e in events if e.get("event") == "session_expired"]
    assert again, "no re-authentication seen by the gate: %s" % events[-5:]
    assert not expired, "connections outlived their session: %s" % expired[:3]
    h.note("rdkafka-check through epochgate: %s; %d re-authentications" % (
        {k: v for k, v in summary.items() if k in ("produced", "acked", "consumed", "missing",
                                                     "duplicates", "out_of_order")},
        len(again)))
    assert epochgate_frame_errors(gate) == 0, "epochgate counted frame errors"


if __name__ == "__main__":
    harness.main(globals())

"""Sidecar credential mode (`upstream_sasl.on_behalf_of_clients`): the
application talks plaintext and unauthenticated to epochgate, and epochgate
logs in on every upstream connection with its own principal before the
client's first request goes out, and again before the broker's session
lifetime ends (KIP-368). The cluster is the embedded one behind
tools/sasl_gate/, which refuses any request before a login; the same clients
straight at the gate fail (the control), through epochgate they succeed, and
the gate's event log shows epochgate's principal on each connection. A
client that starts its own SASL login in this mode gets ILLEGAL_SASL_STATE
and a log line saying why."""

import os

from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import prom_text  # noqa: E402
from epochgate_testlib.sasl_cluster import SaslCluster, logins, sasl_args  # noqa: E402

USER, PASSWORD = "alice", "alice-secret"


def start_sidecar(h, sc, mechanism="SCRAM-SHA-512"):
    pw = os.path.join(h.workdir, "password")
    with open(pw, "w") as f:
        f.write(PASSWORD + "\n")
    cfg = os.path.join(h.workdir, "epochgate.yaml")
    with open(cfg, "w") as f:
        f.write("upstream_sasl:\n  mechanism: %s\n  username: %s\n  password_file: %s\n"
                "  on_behalf_of_clients: true\n" % (mechanism, USER, pw))
    return h.start_gate(sc.bootstrap, ["--config", cfg])


def python_plain(h, client, bootstrap, topic):
    return h.python_peer([client, "--bootstrap", bootstrap, "--topic", topic,
                          "--messages", "100", "--timeout", "20"], timeout=60)


def test_unauthenticated_clients_work_through_the_sidecar(h):
    sc = SaslCluster(h, ["side:3:3"])
    gate = start_sidecar(h, sc)
    # Control: the gate refuses an unauthenticated client outright.
    direct = h.kcat(["-b", sc.bootstrap, "-L", "-m", "3"], check=False, timeout=20)
    assert direct.returncode != 0, "the SASL gate answered an unauthenticated client"
    for client in ("kafka-python", "confluent-kafka"):
        r = python_plain(h, client, gate.bootstrap, "side")
        assert r.get("passed"), "%s without SASL through the sidecar: %s" % (client, r)
    summary = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "side", "--acks", "all",
                               "--idempotent", "--messages", "500", "--consume-group", "g-side"])
    own = [e for e in logins(sc.events()) if e["framing"].startswith("SaslAuthenticate")]
    assert own and all(e["principal"] == USER and e["mechanism"] == "SCRAM-SHA-512"
                       for e in own), own[:3]
    logged_in = prom_text.metric(gate.metrics(), "epochgate_sasl_authentications_total",
                                 side="on_behalf", result="ok")
    assert logged_in >= len([e for e in own if not e["reauthentication"]]) - 3, logged_in
    h.note("sidecar mode: kafka-python, confluent-kafka and rdkafka-check (%d acked) without "
           "SASL; %d logins by epochgate as %s" % (summary["acked"], len(own), USER))


def test_sidecar_logs_in_again_before_the_session_ends(h):
    sc = SaslCluster(h, ["side-reauth:2:3"], lifetime_ms=2000)
    gate = start_sidecar(h, sc, "SCRAM-SHA-256")
    summary = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "side-reauth",
                               "--acks", "all", "--idempotent", "--rate", "300",
                               "--duration-s", "7", "--consume-group", "g-side-reauth"],
                              timeout=90)
    events = sc.events()
    again = [e for e in logins(events) if e.get("reauthentication")]
    expired = [e for e in events if e.get("event") == "session_expired"]
    assert again, "no re-login on a live sidecar connection"
    assert not expired, "a request reached the gate after its session ended: %s" % expired[:2]
    h.note("sidecar re-login: %d re-authentications, %d acked, %d consumed" % (
        len(again), summary["acked"], summary["consumed"]))


def test_client_starting_its_own_sasl_gets_a_clear_error(h):
    sc = SaslCluster(h, ["side:1:3"])
    gate = start_sidecar(h, sc)
    r = h.kcat(["-b", gate.bootstrap, "-L", "-m", "5"] + sasl_args("PLAIN"), check=False,
               timeout=30)
    assert r.returncode != 0, "kcat with its own SASL succeeded in sidecar mode"
    assert "SASL" in r.stderr and "state" in r.stderr.lower(), r.stderr[-400:]
    with open(gate.proc.log_path, errors="replace") as f:
        log = f.read()
    assert "started its own SASL login, but epochgate logs in for it" in log


if __name__ == "__main__":
    harness.main(globals())

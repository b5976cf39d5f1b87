"""`make demo KAFKA=real` (tools/demo.sh --real): the default demo's story on a
real Apache Kafka 4.4.0 cluster (tools/kafka/) instead of the embedded mock:
epochgate in front of it, a librdkafka 2.15.1 idempotent producer and a
consumer group talking only to epochgate, a partition leader moved the real
way (replica reorder + PREFERRED election through the controller) while they
run, and what the clients saw and epochgate did.

With --tls (make demo KAFKA=real TLS=1) the brokers listen with SASL_SSL
(SCRAM-SHA-512 users made through the Admin API, a certificate from the
openssl command line) and the story runs there: the client speaks TLS to
epochgate and logs in as its own user (passed through), epochgate speaks TLS
to the brokers and logs its own connections in as its own user. The demo
prints both configurations, as a user would write them.

Owns: the story and its output. The cluster comes from
tools/kafka/kafka_cluster.py, epochgate and the client from the integration
harness, so the demo shows what the realkafka tests check. Every wait has a
deadline; without --keep it ends by itself (about a minute, most of it the
cluster's start).
"""

import argparse
import json
import os
import signal
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # epochgate_testlib
from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, sl, kafka_cluster  # noqa: E402
from demo import Demo  # noqa: E402

TOPIC = "orders"
RATE = 300
SECONDS = 15
MOVE_AT = 5.0


def story(demo, options):
    print("epochgate demo on a real Apache Kafka %s cluster: a leader moves under a running "
          "producer and consumer" % kafka_cluster.DEFAULT_VERSION)
    print("  logs: %s" % demo.workdir)
    demo.say("starting 1 KRaft controller + 3 brokers (fetched from Maven Central into %s)"
             % kafka_cluster.cache_root())
    cluster = kafka_cluster.KafkaCluster(os.path.join(demo.workdir, "kafka"), security=options.tls)
    demo.on_close(cluster.stop)
    cluster.start()
    rss = cluster.rss_mib()
    demo.say("cluster ready in %.1f s at %s (RSS %d MiB for 4 JVMs)" % (
        cluster.start_seconds, cluster.bootstrap, sum(rss.values())))
    rk.create_topic(cluster, TOPIC)
    demo.say("topic %s: 3 partitions, 3 replicas, min.insync.replicas=2" % TOPIC)
    config = os.path.join(demo.workdir, "epochgate.yaml")
    settings = {"policy": {"rules": [{"topics": TOPIC, "mode": "enforce", "reroute": True}]},
                "refresher": {"interval_ms": 2000}}
    upstream, client_props = cluster.bootstrap, []
    if options.tls:
        upstream, client_props, extra = secure_settings(demo, cluster)
        settings.update(extra)
    with open(config, "w") as f:
        json.dump(settings, f, indent=2)
    if options.tls:
        print("  epochgate's config (%s):\n    %s" % (config, json.dumps(
            {k: v for k, v in settings.items() if k in ("tls", "upstream_tls", "upstream_sasl")})))
        print("  the client's librdkafka settings: %s" % " ".join(
            client_props[i + 1] for i in range(0, len(client_props), 2)).replace("sasl.password=" + USER_PASSWORD,
                                                                                 "sasl.password=***"))
    gate = harness.Epochgate(demo, upstream, ["--config", config])
    demo.on_close(gate.stop)
    demo.say("epochgate: clients bootstrap from %s; admin http://%s" % (gate.bootstrap, gate.admin))

    log = os.path.join(demo.workdir, "clients.rdkafka.log")
    if os.path.exists(log):  # an earlier run's ports are not this one's
        os.unlink(log)
    check = harness.BackgroundCheck(demo, [
        demo.tool("epochgate-rdkafka-check"), "--bootstrap", gate.bootstrap, "--topic", TOPIC,
        "--partitions-keyed", "--idempotent", "--acks", "all", "--duration-s", str(SECONDS),
        "--rate", str(RATE), "--concurrent", "--consume-group", "demo-group",
        "--debug", "broker", "--log-file", log] + client_props, "clients")
    demo.on_close(check.stop)
    demo.say("clients: librdkafka 2.15.1 idempotent producer (acks=all, %d msg/s for %d s) and a "
             "consumer group, given only %s%s" % (RATE, SECONDS, gate.bootstrap,
                                                 " (TLS, SASL SCRAM-SHA-512 as alice)" if options.tls else ""))
    time.sleep(MOVE_AT)
    before = sl.scrape(gate)
    (leader, epoch) = rk.leaders(cluster, [TOPIC])[(TOPIC, 0)]
    target = 1 + leader % 3
    demo.say("%s[0] is led by broker %d at leader epoch %d" % (TOPIC, leader, epoch))
    moved = cluster.ctl("move %s 0 %d" % (TOPIC, target))
    (nl, ne) = rk.leaders(cluster, [TOPIC])[(TOPIC, 0)]
    demo.say("LEADER MOVE: %s[0] broker %d -> %d, epoch %d -> %d (reorder + PREFERRED election, "
             "%.0f ms through the controller)" % (TOPIC, leader, nl, epoch, ne, moved["ms"]))
    lag = rk.wait_view_matches(gate, cluster, [TOPIC], 10)
    demo.say("epochgate's /debug/metadata names broker %d at epoch %d, %.2f s later" % (nl, ne, lag))
    summary = check.result(timeout=SECONDS + 90, expect_pass=False)
    after = sl.scrape(gate)
    demo.say("producer and consumer finished")

    ports = harness.Harness.connected_ports(None, log)
    upstream_ports = set(cluster.broker_ports)
    if options.tls:
        upstream_ports |= set(cluster.listener_ports("SASL_SSL")) | set(cluster.listener_ports("SASL_PLAINTEXT"))
        logins = after.sum("epochgate_sasl_authentications_total", side="passthrough", result="ok")
        own = after.sum("epochgate_sasl_authentications_total", side="own", result="ok")
        print("\nSASL logins: %d of the client's passed through to the brokers, %d of epochgate's own; "
              "TLS handshakes with the client %d, with the brokers %d" % (
                  logins, own, after.sum("epochgate_tls_handshakes_total", side="client", result="ok"),
                  after.sum("epochgate_tls_handshakes_total", side="upstream", result="ok")))
    leaked = sorted(ports & upstream_ports)
    print("\nPorts the clients connected to: %s (epochgate's bootstrap: %d); upstream broker ports dialled: %s"
          % (sorted(ports), gate.bootstrap_address[1], leaked or "none"))
    print("What epochgate did: %s" % sl.fences_text(after))
    print("  reroutes delivered during the move: %d" % sl.delta(after, before, "epochgate_reroutes_total",
                                                             result="delivered"))
    print("\nMessages: %d produced, %d acknowledged, %d consumed: %d lost, %d duplicated, %d out of "
          "order. Delivery latency p50 %.1f ms, p99 %.1f ms, max %.1f ms." % (
              summary["produced"], summary["acked"], summary["consumed"], summary["missing"],
              summary["duplicates"], summary["out_of_order"], summary["latency_ms"]["p50"],
              summary["latency_ms"]["p99"], summary["latency_ms"]["max"]))
    ok = summary.get("passed") and summary["missing"] == 0 and summary["duplicates"] == 0 and not leaked
    if not summary.get("passed"):
        print("CHECK FAILED: %s (first error: %s)" % (summary.get("reason"), summary.get("first_error")))
    print("\nLook for yourself%s:" % ("" if options.keep else " (tools/demo.sh %s --real%s --keep)"
                                      % (options.build_dir, " --tls" if options.tls else "")))
    print("  curl -s http://%s/debug/metadata" % gate.admin)
    if options.tls:
        print("  kcat -b %s -L -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512 "
              "-X sasl.username=alice -X sasl.password=%s -X ssl.ca.location=%s" % (
                  gate.bootstrap, USER_PASSWORD, cluster.ca_file))
    else:
        print("  kcat -b %s -L" % gate.bootstrap)
    if options.keep:
        print("\nThe cluster and epochgate keep running; Ctrl-C stops them.", flush=True)
        stop = []
        signal.signal(signal.SIGINT, lambda *_: stop.append(1))
        signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
        while not stop and gate.proc.alive():
            time.sleep(0.2)
    return 0 if ok else 1


USER_PASSWORD = kafka_cluster.SASL_USERS["alice"]


def secure_settings(demo, cluster):
    """(upstream bootstrap, librdkafka -X arguments, epochgate config keys)
    for the SASL_SSL listeners: TLS on both sides of epochgate, the client's
    SCRAM-SHA-512 login passed through, epochgate's own login for itself."""
    tls = cluster.tls_dir
    pw = os.path.join(demo.workdir, "epochgate-sasl-password")
    with open(pw, "w") as f:
        f.write(kafka_cluster.SASL_USERS["epochgate"] + "\n")
    os.chmod(pw, 0o600)
    extra = {
        "tls": {"cert_file": os.path.join(tls, "server.crt"), "key_file": os.path.join(tls, "server.key")},
        "upstream_tls": {"enabled": True, "ca_file": cluster.ca_file},
        "upstream_sasl": {"mechanism": "SCRAM-SHA-512", "username": "epochgate", "password_file": pw},
    }
    props = ["-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=SCRAM-SHA-512",
             "-X", "sasl.username=alice", "-X", "sasl.password=" + USER_PASSWORD,
             "-X", "ssl.ca.location=" + cluster.ca_file]
    return cluster.listener_bootstrap("SASL_SSL"), props, extra


def main():
    parser = argparse.ArgumentParser(description="epochgate demo on real Kafka (see tools/demo.sh)")
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--tls", action="store_true",
                        help="SASL_SSL brokers; TLS and SASL on both sides of epochgate")
    options = parser.parse_args()
    demo = Demo(options.build_dir)
    demo.workdir = os.path.join(demo.build_dir, "demo-real")
    os.makedirs(demo.workdir, exist_ok=True)
    try:
        return story(demo, options)
    finally:
        demo.close()


if __name__ == "__main__":
    sys.exit(main())

"""The README demo (run it through tools/demo.sh): epochgate in front of the
embedded 3-broker cluster, a librdkafka 2.15.1 idempotent producer and a
consumer group talking only to epochgate, a partition leader moving while
they run, and a plain account of what the clients saw and what epochgate did.

Owns: the story and its output. The processes are started with the
integration harness (tests/lib/epochgate_testlib/harness.py) and the leader move is
the one the fencing scenarios use (tests/lib/epochgate_testlib/scenario_lib.py), so the
demo shows exactly what the tests check. It must never run unbounded: every
wait has a deadline, and without --keep it ends by itself in about 20 s.
"""

import argparse
import json
import os
import signal
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "tls"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # epochgate_testlib
from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib.scenario_lib import harness  # noqa: E402

TOPIC = "orders"
RATE = 500
SECONDS = 8
MOVE_AT = 3.0


class Demo:
    """What the harness classes need from a test fixture: tool paths, a work
    directory, close hooks."""

    def __init__(self, build_dir, workdir=None):
        self.build_dir = os.path.abspath(build_dir)
        # A separate work directory lets a bench use another tree's build
        # without writing into it.
        self.workdir = os.path.abspath(workdir) if workdir else os.path.join(self.build_dir, "demo")
        os.makedirs(self.workdir, exist_ok=True)
        for name in os.listdir(self.workdir):
            if name.endswith((".log", ".stdout", ".csv")):
                os.remove(os.path.join(self.workdir, name))
        self.epochgate_path = os.path.join(self.build_dir, "proxy", "epochgate")
        self.direct = False
        self._processes = []  # BackgroundCheck registers itself here
        self._closers = []
        self.started = time.monotonic()

    def tool(self, name):
        return os.path.join(self.build_dir, "tools", name)

    def on_close(self, fn):
        self._closers.append(fn)

    def close(self):
        for fn in reversed(self._closers):
            try:
                fn()
            except Exception:  # noqa: BLE001 - stopping must go on
                pass

    def say(self, text):
        print("[%5.1fs] %s" % (time.monotonic() - self.started, text), flush=True)


def grep(path, needle, limit=3):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if needle in line:
                    out.append(line.rstrip("\n"))
                    if len(out) >= limit:
                        break
    except OSError:
        pass
    return out


def short_client_line(line):
    """'<epoch s> <level> <client> <FAC>: [thrd:...]: text' -> 'client FAC: text'."""
    parts = line.split(" ", 3)
    if len(parts) < 4:
        return line
    rest = parts[3]
    if "]: " in rest:
        fac, _, text = rest.partition(": [")
        text = text.partition("]: ")[2]
        # librdkafka repeats the broker name at the start of some lines.
        if text.startswith("127.0.0.1:") and ": " in text:
            text = text.partition(": ")[2]
        rest = "%s: %s" % (fac, text)
    return "%s %s" % (parts[2].replace("epochgate-rdkafka-check#", ""), rest)


def run(options):
    demo = Demo(options.build_dir)
    try:
        return story(demo, options)
    finally:
        demo.close()


def move_gaps(rows, moved_us, partition, before_us=100000, after_us=1000000,
              control_us=2000000):
    """(consumer gap, its control, producer latency, its control), ms: the
    longest time between two consecutive first receipts of `partition`'s
    records, counting from the last one before the window, and the longest
    delivery latency of a message sent in the window, for the window around
    `moved_us` and the same window `control_us` earlier. None without
    consume stamps (an older epochgate-rdkafka-check)."""
    got = sorted(r["consume_us"] for r in rows
                 if r["partition"] == partition and r.get("consume_us", 0) > 0)
    if not got:
        return None

    def window(at):
        lo, hi = at - before_us, at + after_us
        seg = [t for t in got if lo <= t <= hi]
        prev = [t for t in got if t < lo]
        nxt = [t for t in got if t > hi]
        seg = prev[-1:] + seg + nxt[:1]
        gap = max((b - a for a, b in zip(seg, seg[1:])), default=0) / 1000.0
        lat = max((r["ack_us"] - r["send_us"] for r in rows
                   if r["partition"] == partition and lo <= r["send_us"] <= hi
                   and r["ack_us"] > 0), default=0) / 1000.0
        return gap, lat

    gap, lat = window(moved_us)
    gap0, lat0 = window(moved_us - control_us)
    return gap, gap0, lat, lat0


def story(demo, options):
    print("epochgate demo: a partition leader moves under a running producer and consumer%s"
          % (", TLS on both sides" if options.tls else ""))
    print("  logs: %s" % demo.workdir)
    cluster = harness.MockCluster(demo, 3, ["%s:3:3" % TOPIC], ["--rebalance-delay-ms", "0"])
    demo.on_close(cluster.stop)
    demo.say("cluster: 3 brokers (librdkafka 2.15.1 mock cluster) at %s, topic %s "
             "(3 partitions, 3 replicas)" % (cluster.bootstrap, TOPIC))
    upstream_bootstrap, settings, client_tls, tls_ctx = cluster.bootstrap, {}, [], None
    if options.tls:
        upstream_bootstrap, settings, client_tls, tls_ctx = tls_setup(demo, cluster)
    # Rerouting on for the demo's topic: the producer's writes that reach the
    # old leader's listener are delivered to the new leader by epochgate.
    settings["policy"] = {"rules": [{"topics": TOPIC, "mode": "enforce", "reroute": True}]}
    config = os.path.join(demo.workdir, "epochgate.yaml")
    with open(config, "w") as f:
        json.dump(settings, f, indent=2)
    gate = harness.Epochgate(demo, upstream_bootstrap, ["--config", config])
    demo.on_close(gate.stop)
    demo.say("epochgate: clients bootstrap from %s%s; admin http://%s" % (
        gate.bootstrap, " (TLS)" if options.tls else "", gate.admin))
    if options.tls:
        show_handshake(demo, gate)
    gc = sl.GateClient(demo, gate, tls=tls_ctx)
    sl.open_node_connections(gc, [TOPIC])

    log = os.path.join(demo.workdir, "clients.rdkafka.log")
    timeline = os.path.join(demo.workdir, "timeline.csv")
    check = harness.BackgroundCheck(demo, [
        demo.tool("epochgate-rdkafka-check"), "--bootstrap", gate.bootstrap, "--topic", TOPIC,
        "--partitions-keyed", "--idempotent", "--acks", "all", "--duration-s", str(SECONDS),
        "--rate", str(RATE), "--concurrent", "--consume-group", "demo-group",
        # The mock cluster answers a Fetch that finds nothing only after its
        # MaxWait (new data does not wake it, as it would a Kafka broker):
        # with librdkafka's 500 ms default every quiet moment would look like
        # a half-second gap, and the consumer's gap would not show the move.
        "-X", "fetch.wait.max.ms=10",
        "--timeline", timeline, "--debug", "broker,metadata,msg,fetch", "--log-file", log]
        + client_tls, "clients")
    demo.on_close(check.stop)
    demo.say("clients: librdkafka 2.15.1 idempotent producer (acks=all, %d msg/s for %d s, keyed "
             "over 3 partitions) and a consumer group, both given only %s"
             % (RATE, SECONDS, gate.bootstrap))

    time.sleep(MOVE_AT)
    before = sl.scrape(gate)
    p0 = cluster.partition(TOPIC, 0)
    new = sl.other_broker(p0["leader"])
    demo.say("%s[0] is led by broker %d at leader epoch %d" % (TOPIC, p0["leader"],
                                                                p0["leader_epoch"]))
    moved_us, epoch, old, learned_us = sl.move_view_first(cluster, gc, TOPIC, 0, new,
                                                          check_first=False)
    demo.say("LEADER MOVE: %s[0] broker %d -> broker %d, leader epoch %d -> %d. epochgate's "
             "view learned it from a Metadata answer crossing it (as from its refresher or "
             "another client) just before broker %d stepped down"
             % (TOPIC, old, new, p0["leader_epoch"], epoch, old))
    summary = check.result(timeout=SECONDS + 60, expect_pass=False)
    after = sl.scrape(gate)
    demo.say("producer and consumer finished")

    # -- what the clients saw
    print("\nAddresses the clients connected to (every one is epochgate's):")
    gc.metadata([])
    upstream = {port: node for node, port in enumerate(cluster.ports, start=1)}
    if options.tls:  # the brokers' TLS listeners (HAProxy) are upstream ports too
        for node, address in enumerate(upstream_bootstrap.split(","), start=1):
            upstream[harness.parse_hostport(address)[1]] = node
    listeners = {gate.bootstrap_address[1]: "epochgate bootstrap listener"}
    # What epochgate dials for each broker: with TLS, HAProxy's TLS listener
    # (what the brokers advertise), in front of the mock's plaintext port.
    tls_fronts = {}
    if options.tls:
        for node, address in enumerate(upstream_bootstrap.split(","), start=1):
            tls_fronts[node] = harness.parse_hostport(address)
    for node, (host, port) in sorted(gc.brokers.items()):
        if node in tls_fronts:
            itself = "%s:%d TLS (HAProxy, in front of the mock's plaintext %s:%d)" % (
                *tls_fronts[node], *cluster.broker_address(node))
        else:
            itself = "%s:%d" % cluster.broker_address(node)
        listeners[port] = "epochgate listener for broker %d   (the broker itself: %s)" % (
            node, itself)
    order = [gate.bootstrap_address[1]] + [port for _, (_, port) in sorted(gc.brokers.items())]
    dialled = sorted(demo_connected_ports(log),
                     key=lambda p: order.index(p) if p in order else len(order))
    for port in dialled:
        print("  127.0.0.1:%-6d %s" % (port, listeners.get(port, "?")))
    leaked = [p for p in dialled if p in upstream]
    print("  upstream broker ports the clients dialled: %s" % (
        ", ".join("%d (broker %d)" % (p, upstream[p]) for p in leaked) if leaked else "none"))

    # -- what epochgate did
    fenced_lines = grep(gate.proc.log_path, "[policy] fenced", limit=4)
    print("\nWhat epochgate did when the clients' requests reached broker %d's listener:" % old)
    for line in fenced_lines:
        print("  log:      %s" % line)
    if not fenced_lines:
        print("  log:      (no fence logged)")
    for name, labels in ((sl.FENCED, "fenced"), (sl.HINTS, "hints"),
                         ("epochgate_reroutes_total", "reroutes")):
        for l, v in after.rows(name):
            lab = ",".join('%s="%s"' % kv for kv in sorted(l.items()))
            print("  /metrics: %s{%s} %d" % (name, lab, v))
    delivered = sl.delta(after, before, "epochgate_reroutes_total", result="delivered")
    print("  (epochgate delivered %d of the producer's writes to the new leader %d itself "
          "(reroute: true) and the producer got the leader's answer; it answered the consumer "
          "FENCED_LEADER_EPOCH with a KIP-951 hint: leader %d, epoch %d, at %s:%d; Fetch is "
          "never rerouted)" % (delivered, new, new, epoch, gc.brokers[new][0], gc.brokers[new][1]))

    # -- how the clients recovered
    print("\nHow the clients recovered:")
    errors = [l for l in grep(log, "encountered error: Broker: Not leader", limit=20)
              if "%s [0]: MessageSet" % TOPIC in l]
    for line in errors[:1]:
        print("  %s" % short_client_line(line))
    for line in [l for l in grep(log, "METADATAUPDATE", limit=50)
                 if "[0]: updated with leader %d and epoch %d" % (new, epoch) in l][:2]:
        print("  %s" % short_client_line(line))
    rows = harness.read_timeline(timeline) if os.path.exists(timeline) else []
    recovery = harness.recovery_ms(rows, moved_us, 0, new)
    hint_s = sl.log_time_of_hint(log, TOPIC, 0, new, epoch)
    fetched = sl.first_fetched_from(log, TOPIC, 0, new, learned_us / 1e6)
    if hint_s:
        print("  the producer took epochgate's hint %.1f ms after epochgate learned the move "
              "(its leader-discovery update, not a Metadata round trip)" % (
              (hint_s * 1e6 - learned_us) / 1000.0))
    sent_after = [r["ack_us"] for r in rows if r["partition"] == 0 and r["error"] == 0
                  and r["send_us"] >= moved_us]
    if sent_after:
        print("  first acknowledgement of a message sent after the move: %.1f ms after it "
              "(without rerouting, librdkafka waits retry.backoff.ms = 100 ms before resending)"
              % ((min(sent_after) - moved_us) / 1000.0))
    if recovery is not None:
        print("  first message acknowledged by broker %d: %.1f ms after the move "
              "(any message, one sent before the move included)" % (new, recovery))
    if fetched:
        print("  first records the consumer fetched from broker %d: %.1f ms after the move"
              % (new, (fetched * 1e6 - moved_us) / 1000.0))

    gaps = move_gaps(rows, moved_us, 0)
    if gaps:
        print("  across the move (from 100 ms before it to 1 s after; in brackets the same "
              "window 2 s earlier, nothing moving): consumer's longest gap between records of "
              "%s[0] %.1f ms (%.1f ms); producer's longest delivery latency %.1f ms (%.1f ms)"
              % (TOPIC, *gaps))

    ok = (summary.get("passed") and summary["missing"] == 0 and summary["duplicates"] == 0
          and sl.delta(after, before, sl.FENCED) >= 1)
    print("\nMessages: %d produced, %d acknowledged, %d consumed: %d lost, %d duplicated, %d out "
          "of order. Delivery latency p50 %.1f ms, p99 %.1f ms, max %.1f ms."
          % (summary["produced"], summary["acked"], summary["consumed"], summary["missing"],
             summary["duplicates"], summary["out_of_order"], summary["latency_ms"]["p50"],
             summary["latency_ms"]["p99"], summary["latency_ms"]["max"]))
    if not summary.get("passed"):
        print("CHECK FAILED: %s (first error: %s)" % (summary.get("reason"),
                                                      summary.get("first_error")))

    print("\nLook for yourself%s:" % ("" if options.keep else
                                      " (while it runs: tools/demo.sh %s --keep)"
                                      % options.build_dir))
    print("  curl -s http://%s/metrics | grep '^epochgate_'" % gate.admin)
    print("  curl -s http://%s/debug/metadata" % gate.admin)
    print("  kcat -b %s -L%s" % (gate.bootstrap, "".join(
        " %s" % a for a in client_tls)))
    print("  logs: %s/{epochgate.log,clients.rdkafka.log,mockcluster.log}" % demo.workdir)
    if options.keep:
        print("\nThe cluster and epochgate keep running; Ctrl-C stops them.", flush=True)
        stop = []
        signal.signal(signal.SIGINT, lambda *_: stop.append(1))
        signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
        while not stop and gate.proc.alive() and cluster.proc.alive():
            time.sleep(0.2)
    return 0 if ok else 1


def tls_setup(demo, cluster):
    """TLS on both sides: certificates from tools/tls/make-certs.sh, Debian's
    HAProxy as each broker's TLS listener (the mock advertises HAProxy's
    ports), epochgate with `tls` and `upstream_tls`. Returns (upstream
    bootstrap, epochgate config settings, client librdkafka -X args, ssl context)."""
    import ssl
    import tls_rig
    certs = tls_rig.make_certs(os.path.join(demo.workdir, "certs"))
    rig = tls_rig.broker_fronts(demo.workdir, certs, cluster.addresses)
    demo.on_close(rig.stop)
    for broker_id, (_, port) in enumerate(rig.addresses, start=1):
        cluster.cmd("advertise %d 127.0.0.1 %d" % (broker_id, port))
    upstream = ",".join("%s:%d" % a for a in rig.addresses)
    demo.say("brokers' TLS listeners: HAProxy at %s (certificates by the openssl CLI in %s)"
             % (upstream, certs.dir))
    settings = {"tls": {"cert_file": certs.path("server", "crt"),
                        "key_file": certs.path("server", "key")},
                "upstream_tls": {"enabled": True, "ca_file": certs.ca, "verify_hostname": True}}
    client = ["-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + certs.ca]
    return upstream, settings, client, ssl.create_default_context(cafile=certs.ca)


def show_handshake(demo, gate):
    """What `openssl s_client` sees on epochgate's bootstrap listener."""
    import subprocess
    r = subprocess.run(["openssl", "s_client", "-connect", gate.bootstrap, "-brief",
                        "-CAfile", os.path.join(demo.workdir, "certs", "ca.crt")],
                       input=b"", capture_output=True, timeout=20)
    lines = [l for l in r.stderr.decode(errors="replace").splitlines()
             if l.startswith(("Protocol version", "Ciphersuite", "Peer certificate",
                              "Verification"))]
    demo.say("openssl s_client %s: %s" % (gate.bootstrap, "; ".join(lines) or "no handshake"))


def demo_connected_ports(rdkafka_log):
    ports = set()
    for line in grep(rdkafka_log, "Connecting to ipv4#", limit=1000):
        addr = line.split("Connecting to ipv4#", 1)[1].split()[0]
        ports.add(int(addr.rsplit(":", 1)[1]))
    return ports


def main():
    parser = argparse.ArgumentParser(description="epochgate demo (see tools/demo.sh)")
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--keep", action="store_true",
                        help="leave the cluster and epochgate running until Ctrl-C")
    parser.add_argument("--tls", action="store_true",
                        help="the same story with TLS on both sides (HAProxy as the brokers' "
                             "TLS listeners)")
    options = parser.parse_args()
    try:
        sys.exit(run(options))
    except (AssertionError, TimeoutError) as e:
        print("demo failed: %s" % e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Benchmarks on a real Apache Kafka 4.4.0 cluster (tools/kafka/, 1 KRaft
controller + 3 brokers on loopback), straight at the brokers, through HAProxy
and through epochgate in the same run, reported as ratios. Not a test: run by
hand, then copy the printed Markdown into bench/RESULTS.md.

HAProxy (Debian's, `mode tcp`, default threads) has one frontend per broker
on the port that broker advertises on its extra HAPROXY listener
(KafkaCluster(proxy_listener=True)), forwarding to the port the listener
binds, plus a bootstrap frontend over all three. Clients bootstrapped there
see only HAProxy's ports, in Metadata and in the brokers' own KIP-951 hints.

1. Throughput: Kafka's own ProducerPerformance (acks=all) and
   ConsumerPerformance, on each path, alternating (order rotated per round),
   --rounds times each; medians and the ratios epochgate/direct and
   epochgate/haproxy.
2. A leader move (replica reorder + PREFERRED election through the
   controller) under a steady producer, --moves times per client and path:
   - the Java client (kafka-clients 4.4.0, MoveTimeline.java): ms from the
     move to the acknowledgement and to the consumer's fetch of the first
     record written under the new leader epoch, and the longest delivery;
   - librdkafka 2.15.1 (epochgate-rdkafka-check --timeline): ms from the
     move to the first acknowledgement by the new leader, and the longest
     delivery.
   With --timeline-dir the Java client's per-message timeline of each move
   is kept (send, ack and fetch times relative to the move).
   --kafka-python kafka-python,kafka-python-3 adds kafka-python consumers
   (Debian's 2.0.2: Fetch v4, no leader epochs; the client matrix's 3.x:
   Fetch v12 with them) of each Java move's partition, beside the Java
   consumer: the same gap and acknowledgement-to-fetch figures, and records
   lost, delivered twice or out of order against the partition.

    /usr/bin/python3 bench/real_kafka.py --build-dir build [--work-dir DIR] [--rounds 3] [--moves 3]
        [--paths direct,haproxy,epochgate,epochgate-warm] [--java-only | --rdkafka-only]
        [--rdkafka-debug broker,topic,msg,eos,protocol] [--broker-config KEY=VALUE ...]
        [--kafka-python kafka-python,kafka-python-3 [--kafka-python-debug]]

`epochgate-warm` is a second epochgate with `limits.warm_upstreams_per_broker:
1` (a new client connection takes an upstream connection dialled and answered
ahead), to compare the opt-in warm upstream pool with the default in one run.

epochgate runs with its defaults plus `refresher.interval_ms: 2000` and an
enforce rule with rerouting on the move topics (as the demo). The machine is
shared: the figures are ratios within one run, never absolute targets.
"""

import argparse
import csv
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # epochgate_testlib
sys.path.insert(0, os.path.join(ROOT, "tools"))  # demo.py: the Demo runner
from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, kafka_cluster  # noqa: E402
from epochgate_testlib import prom_text  # noqa: E402
from demo import Demo  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "kafka_load"))
import leader_move_consumer as lmc  # noqa: E402  (the kafka-python consumer and its judge)

# --kafka-python consumers' settings: the fetch wait of MoveTimeline's Java
# consumer (fetch.max.wait.ms 50), so neither waits longer on an empty fetch.
KAFKA_PYTHON_CONF = {"fetch_max_wait_ms": 50}
PERF_RESULT = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                         r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


class HAProxy:
    """Debian's HAProxy in TCP mode in front of the brokers' HAPROXY
    listeners: frontend i on the port broker i advertises, to the port it
    binds; a bootstrap frontend round-robin over the three."""

    def __init__(self, workdir, routes):
        self.routes = list(routes)  # (advertised, bound) per broker
        self.reservation = kafka_cluster.free_ports(1)
        self.bootstrap_port = self.reservation.ports[0]
        self.cfg_path = os.path.join(workdir, "haproxy.cfg")
        self.log_path = os.path.join(workdir, "haproxy.log")
        self.proc = None

    @property
    def bootstrap(self):
        return "%s:%d" % (kafka_cluster.LOOPBACK, self.bootstrap_port)

    def _config(self):
        lo = kafka_cluster.LOOPBACK
        lines = ["global", "  log stderr format raw local0 info",
                 "defaults", "  mode tcp", "  log global", "  option tcplog",
                 "  timeout connect 5s",
                 # Kafka clients keep connections idle for minutes between
                 # metadata refreshes; an hour keeps HAProxy from cutting them.
                 "  timeout client 1h", "  timeout server 1h"]
        for i, (adv, bound) in enumerate(self.routes):
            lines += ["frontend b%d" % i, "  bind %s:%d" % (lo, adv), "  default_backend b%d_up" % i,
                      "backend b%d_up" % i, "  server s0 %s:%d" % (lo, bound)]
        lines += ["frontend bootstrap", "  bind %s:%d" % (lo, self.bootstrap_port),
                  "  default_backend bootstrap_up", "backend bootstrap_up", "  balance roundrobin"]
        lines += ["  server s%d %s:%d" % (i, lo, bound) for i, (_, bound) in enumerate(self.routes)]
        return "\n".join(lines) + "\n"

    def start(self, timeout=15.0):
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        with open(self.cfg_path, "w") as f:
            f.write(self._config())
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([haproxy, "-db", "-f", self.cfg_path], stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        for port in [a for a, _ in self.routes] + [self.bootstrap_port]:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError("haproxy exited %s, see %s" % (self.proc.returncode, self.log_path))
                try:
                    socket.create_connection((kafka_cluster.LOOPBACK, port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("haproxy not listening on %d after %.0fs" % (port, timeout))
                    time.sleep(0.1)
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.reservation.release()


# --java-log-config: a log4j2 properties file for the Java clients instead of
# the tools' default (e.g. DEBUG for the consumer's fetch and validation).
JAVA_LOG_CONFIG = ""


def java(prefix, main, args, timeout=600, classes=None):
    cp = kafka_cluster.classpath(prefix, *([classes] if classes else []))
    log = ("-Dlog4j2.configurationFile=" + JAVA_LOG_CONFIG if JAVA_LOG_CONFIG
           else kafka_cluster.log_option(prefix, tools=True))
    r = subprocess.run(["java", "-Xmx512m", log, "-cp", cp, main] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (main, r.stderr.decode(errors="replace")[-2000:]))
    return r.stdout.decode(errors="replace")


def producer_perf(prefix, bootstrap, topic, records, size):
    out = java(prefix, "org.apache.kafka.tools.ProducerPerformance", [
        "--topic", topic, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", "bootstrap.servers=" + bootstrap, "acks=all", "linger.ms=5",
        "batch.size=131072", "compression.type=none"])
    m = PERF_RESULT.findall(out)
    if not m:
        raise RuntimeError("no ProducerPerformance summary: %s" % out[-500:])
    n, rps, mbs, avg, mx, p50, p95, p99 = m[-1]
    return {"records_s": float(rps), "mb_s": float(mbs), "avg_ms": float(avg), "p99_ms": float(p99),
            "max_ms": float(mx)}


def consumer_perf(prefix, bootstrap, topic, records, group):
    out = java(prefix, "org.apache.kafka.tools.ConsumerPerformance", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
        "--group", group, "--timeout", "60000"])
    lines = [l for l in out.splitlines() if l and l[0].isdigit()]
    if not lines:
        raise RuntimeError("no ConsumerPerformance summary: %s" % out[-500:])
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, ...
    f = [x.strip() for x in lines[-1].split(",")]
    return {"mb_s": float(f[3]), "records_s": float(f[5])}


def throughput(demo, c, boots, prefix, o):
    rows = {(wl, p): [] for wl in ("produce", "consume") for p in o.paths}
    for r in range(o.rounds):
        # Rotated order per round, so neither a path's position nor a burst
        # of the shared machine's noise favours one path.
        order = o.paths[r % len(o.paths):] + o.paths[:r % len(o.paths)]
        for path in order:
            bootstrap = boots[path]
            topic = rk.create_topic(c, "perf-%s-%d" % (path, r))
            rows[("produce", path)].append(producer_perf(prefix, bootstrap, topic, o.records, o.record_size))
            rows[("consume", path)].append(consumer_perf(prefix, bootstrap, topic, o.records,
                                                         "perf-g-%s-%d" % (path, r)))
            demo.say("round %d %s: produce %.1f MB/s, consume %.1f MB/s" % (
                r + 1, path, rows[("produce", path)][-1]["mb_s"], rows[("consume", path)][-1]["mb_s"]))
    return rows


def java_move(c, prefix, classes, bootstrap, topic, o, timeline):
    args = ["--bootstrap", bootstrap, "--mover", c.bootstrap, "--topic", topic, "--rate", str(o.rate),
            "--seconds", "8", "--move-at-ms", "3000"]
    if timeline:
        args += ["--timeline", timeline]
    out = java(prefix, "MoveTimeline", args, timeout=120, classes=classes)
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


def rdkafka_move(demo, c, bootstrap, topic, o, name):
    timeline = os.path.join(demo.workdir, name + ".csv")
    check = harness.BackgroundCheck(demo, [
        demo.tool("epochgate-rdkafka-check"), "--bootstrap", bootstrap, "--topic", topic, "--idempotent",
        "--acks", "all", "--duration-s", "8", "--rate", str(o.rate), "--timeline", timeline]
        # librdkafka's own log of the move, to see when it learns the new
        # leader and when it connects to it (next to the timeline).
        + (["--debug", o.rdkafka_debug, "--log-file", os.path.join(demo.workdir, name + ".rdkafka.log")]
           if o.rdkafka_debug else []), name)
    time.sleep(3)
    leader = rk.leaders(c, [topic])[(topic, 0)][0]
    target = 1 + leader % 3
    moved_us = int(time.time() * 1e6)
    c.ctl("move %s 0 %d" % (topic, target))
    s = check.result(timeout=120, expect_pass=False)
    rows = harness.read_timeline(timeline)
    rec = harness.recovery_ms(rows, moved_us, 0, target)
    return {"first_new_ack_ms": rec if rec is not None else -1, "max_latency_ms": s["latency_ms"]["max"],
            "errors": s["failed"], "acked": s["acked"]}


def fetch_windows(fetched, pairs):
    """One consumer's side of one move (ms after the move): the longest time
    between two consecutive fetches from 100 ms before the move to 1 s after
    it (counting from the last fetch before and to the first after), and the
    longest time from a record's acknowledgement to its fetch among records
    acknowledged in that window (the consumer's own part; the gap also holds
    the producer's), each beside the same window 2 s earlier, where nothing
    moved. `fetched`: fetch times, sorted; `pairs`: (ack, fetch) per record."""
    def gap(lo, hi):
        seg = ([t for t in fetched if t < lo][-1:] + [t for t in fetched if lo <= t <= hi]
               + [t for t in fetched if t > hi][:1])
        return max((b - a for a, b in zip(seg, seg[1:])), default=float("nan"))

    def delay(lo, hi):
        return max((f - a for a, f in pairs if lo <= a <= hi), default=float("nan"))

    return {"fetch_gap_ms": gap(-100, 1000), "fetch_gap_control_ms": gap(-2100, -1000),
            "fetch_delay_ms": delay(-100, 1000), "fetch_delay_control_ms": delay(-2100, -1000)}


def consumer_gaps(timeline):
    """The Java consumer's side of one move (fetch_windows), from
    MoveTimeline's per-record CSV."""
    with open(timeline) as fh:
        rows = [r for r in csv.DictReader(fh) if float(r["fetch_ms"]) != -1 and float(r["ack_ms"]) != -1]
    pairs = [(float(r["ack_ms"]), float(r["fetch_ms"])) for r in rows]
    return fetch_windows(sorted(f for _, f in pairs), pairs)


class KafkaPythonConsumers:
    """--kafka-python: kafka-python consumers (lmc.CLIENTS keys) of the
    partition of one Java move, started before MoveTimeline, each assigned
    partition 0 from the beginning (no group) and stamping every record's
    arrival with CLOCK_MONOTONIC, the clock of MoveTimeline's move_mono_ns."""

    def __init__(self, demo, clients, bootstrap, topic, name, debug):
        self.runs = []
        for client in clients:
            _, py, script, _, _ = lmc.CLIENTS[client]
            out = os.path.join(demo.workdir, "%s-%s.json" % (name, client))
            log = open(os.path.join(demo.workdir, "%s-%s.log" % (name, client)), "w")
            for stale in (out, out + ".stop"):
                if os.path.exists(stale):
                    os.remove(stale)
            p = subprocess.Popen([py, "-c", script, bootstrap, json.dumps(KAFKA_PYTHON_CONF), "120", out,
                                  "debug" if debug else "-", topic],
                                 stdout=subprocess.PIPE, stderr=log, text=True)
            log.close()
            self.runs.append((client, p, out))
        for client, p, _ in self.runs:
            if not p.stdout.readline().startswith("ready"):
                self.stop()
                raise RuntimeError("kafka-python consumer %s did not start" % client)

    def stop(self, drain=2.0):
        """Ends each consumer `drain` s from now; returns {client: its output}."""
        time.sleep(drain)
        out = {}
        for client, p, path in self.runs:
            open(path + ".stop", "w").close()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
            if os.path.exists(path):
                with open(path) as fh:
                    out[client] = json.load(fh)
        return out


def kafka_python_move(data, timeline, r):
    """A kafka-python consumer's side of one Java move `r`: fetch_windows
    over its arrivals, its acknowledgement-to-fetch time for the first record
    written under the new leader epoch, and records lost, delivered twice or
    out of order against the partition (the acknowledged records in offset
    order, from MoveTimeline's CSV; its producer is idempotent)."""
    with open(timeline) as fh:
        rows = [x for x in csv.DictReader(fh) if not x["error"] and int(x["offset"]) >= 0]
    ack = {int(x["seq"]): float(x["ack_ms"]) for x in rows}
    stored = [int(x["seq"]) for x in sorted(rows, key=lambda x: int(x["offset"]))]
    records = [(t, off, v) for t, off, v in data["records"]]
    first = {}
    for t, _, v in records:
        first.setdefault(v, (t - r["move_mono_ns"]) / 1e6)
    lost, dup, ooo = lmc.judge(records, stored)
    out = fetch_windows(sorted(first.values()), [(ack[v], f) for v, f in first.items() if v in ack])
    seq = r.get("first_new_seq", -1)
    out.update({"version": data.get("version"), "consumed": len(records), "stored": len(stored),
                "lost": lost, "duplicated": dup, "out_of_order": ooo,
                "first_new_ack_to_fetch_ms": (first[seq] - ack[seq]) if seq in first and seq in ack
                else float("nan")})
    return out


def delivery_across(timeline, move_ms, window_ms=100):
    """The Java producer's side of one move, from MoveTimeline's per-record
    CSV (ms after the move): the longest delivery latency (ack minus send)
    among records sent from `window_ms` before the move to `window_ms` after
    the election returned (a record never acknowledged counts as infinite),
    beside the same 2 s earlier, where nothing moved; and how many
    acknowledged records got an offset below an earlier-sent one (stored out
    of the order sent). The producer's start (its ProducerId) is 3 s before
    the move, in neither window."""
    with open(timeline) as fh:
        rows = list(csv.DictReader(fh))

    def acked(r):
        return not math.isnan(float(r["ack_ms"])) and not r["error"]

    def longest(lo, hi):
        lat = [float(r["ack_ms"]) - float(r["send_ms"]) if acked(r) else float("inf")
               for r in rows if lo <= float(r["send_ms"]) <= hi]
        return max(lat, default=float("nan"))

    offsets = [int(r["offset"]) for r in rows if acked(r) and int(r["offset"]) >= 0]
    ooo = sum(1 for a, b in zip(offsets, offsets[1:]) if b < a)
    return {"longest_across_ms": longest(-window_ms, move_ms + window_ms),
            "longest_control_ms": longest(-2000 - window_ms, -2000 + window_ms),
            "offsets_out_of_order": ooo}


# epochgate's counters of what it did to a move's writes, read before and
# after each move through it (the difference lands in that move's result).
GATE_COUNTERS = (("reroutes_delivered", "epochgate_reroutes_total", {"result": "delivered"}),
                 ("reroutes_fell_back", "epochgate_reroutes_total", {"result": "fell_back"}),
                 ("fenced_partitions", "epochgate_fenced_partitions_total", {"api": "produce"}),
                 # Runs refused across the new leader's takeover (docs/rerouting.md):
                 # sent again together, and all of them whatever the outcome.
                 ("gaps_resent", "epochgate_reroute_sequence_gaps_total", {"outcome": "resent"}),
                 ("gaps", "epochgate_reroute_sequence_gaps_total", {}))


def gate_counters(gate):
    """epochgate's GATE_COUNTERS now, by short name (empty without a gate)."""
    if gate is None:
        return {}
    text = gate.metrics()
    return {short: prom_text.metric(text, name, **labels) for short, name, labels in GATE_COUNTERS}


def moves(demo, c, boots, prefix, o, gates=None):
    classes = None if o.rdkafka_only else kafka_cluster.compile_java(
        prefix, [os.path.join(HERE, "real_kafka", "MoveTimeline.java")])
    out = {}
    for i in range(o.moves):
        for path in o.paths[i % len(o.paths):] + o.paths[:i % len(o.paths)]:
            bootstrap = boots[path]
            if o.rdkafka_only:
                topic = rk.create_topic(c, "mv-rd-%s-%d" % (path, i), partitions=1)
                r = rdkafka_move(demo, c, bootstrap, topic, o, "rd-%s-%d" % (path, i))
                out.setdefault(("librdkafka", path), []).append(r)
                demo.say("librdkafka %s move %d: %s" % (path, i + 1, r))
                continue
            topic = rk.create_topic(c, "mv-java-%s-%d" % (path, i), partitions=1)
            tl = os.path.join(o.timeline_dir or demo.workdir, "java-%s-%d.csv" % (path, i))
            gate = (gates or {}).get(path)
            before = gate_counters(gate)
            kp = (KafkaPythonConsumers(demo, o.kafka_python, bootstrap, topic, "kp-%s-%d" % (path, i),
                                       o.kafka_python_debug) if o.kafka_python else None)
            try:
                r = java_move(c, prefix, classes, bootstrap, topic, o, tl)
            finally:
                kp_out = kp.stop() if kp else {}
            r.update({k: v - before[k] for k, v in gate_counters(gate).items()})
            r.update(consumer_gaps(tl))
            r.update(delivery_across(tl, r["move_ms"]))
            out.setdefault(("Java", path), []).append(r)
            demo.say("Java %s move %d: %s" % (path, i + 1, r))
            for client in o.kafka_python:
                k = kafka_python_move(kp_out[client], tl, r) if client in kp_out else {"missing": True}
                out.setdefault((client, path), []).append(k)
                demo.say("%s %s move %d: %s" % (client, path, i + 1, k))
            if o.java_only:
                continue
            topic = rk.create_topic(c, "mv-rd-%s-%d" % (path, i), partitions=1)
            r = rdkafka_move(demo, c, bootstrap, topic, o, "rd-%s-%d" % (path, i))
            out.setdefault(("librdkafka", path), []).append(r)
            demo.say("librdkafka %s move %d: %s" % (path, i + 1, r))
    return out


def med(xs):
    xs = [x for x in xs if x is not None and x >= 0]
    return statistics.median(xs) if xs else float("nan")


# The ratios printed when both paths ran: epochgate against the bare cluster
# and against a proxy that only copies bytes; HAProxy's own cost beside them.
RATIOS = (("epochgate", "direct"), ("epochgate", "haproxy"), ("haproxy", "direct"),
          ("epochgate-warm", "epochgate"))


def kafka_python_report(mv, o):
    """--kafka-python: each kafka-python consumer beside the Java moves, over
    all moves per path, in the Java consumer's columns (fetch_windows) plus
    its part for the first new-epoch record and its safety counts."""
    for client in o.kafka_python:
        rows = {path: [r for r in mv.get((client, path), []) if not r.get("missing")] for path in o.paths}
        done = [r for rs in rows.values() for r in rs]
        if not done:
            print("\n%s consumer: no output" % client)
            continue
        print("\n%s consumer (%s) beside the Java moves, assigned partition 0 from the beginning, settings %s; "
              "over all moves per path (ms): median / max, in brackets the same for the window 2 s earlier; "
              "first new-epoch record = its acknowledgement to this consumer's fetch, median / max:\n" % (
                  lmc.CLIENTS[client][0].format(version=done[0]["version"]), client,
                  json.dumps(KAFKA_PYTHON_CONF)))
        print("| Path | moves | longest gap ms (no move) | ack to fetch ms (no move) | first new-epoch record, "
              "ack to fetch ms | each move's gap | consumed / stored | lost | dup | ooo |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for path, rs in rows.items():
            if not rs:
                continue

            def spread(key):
                # statistics.median, not med(): a record can reach a
                # consumer before its producer's acknowledgement (negative).
                xs = [r[key] for r in rs if not math.isnan(r[key])]
                return "%.0f / %.0f" % (statistics.median(xs), max(xs)) if xs else "-"

            print("| %s | %d of %d | %s (%s) | %s (%s) | %s | %s | %d / %d | %d | %d | %d |" % (
                path, len(rs), len(mv.get((client, path), [])), spread("fetch_gap_ms"),
                spread("fetch_gap_control_ms"), spread("fetch_delay_ms"), spread("fetch_delay_control_ms"),
                spread("first_new_ack_to_fetch_ms"), ", ".join("%.0f" % r["fetch_gap_ms"] for r in rs),
                sum(r["consumed"] for r in rs), sum(r["stored"] for r in rs), sum(r["lost"] for r in rs),
                sum(r["duplicated"] for r in rs), sum(r["out_of_order"] for r in rs)))


def report(tp, mv, o, c):
    print("\n### Real Apache Kafka %s: throughput (Kafka's ProducerPerformance / ConsumerPerformance)\n"
          % kafka_cluster.DEFAULT_VERSION)
    print("%d records of %d bytes per run, acks=all, linger.ms=5, batch.size=131072; topic of 3 partitions "
          "(RF 3, min.insync.replicas=2); %d runs per path, alternating (order rotated per round); medians.\n" % (
              o.records, o.record_size, o.rounds))
    print("| Workload | Path | MB/s (runs) | records/s | latency avg / p99 (ms) |")
    print("|---|---|---|---|---|")
    for wl in ("produce", "consume"):
        for path in o.paths:
            rs = tp[(wl, path)]
            lat = ("%.1f / %.0f" % (med([r["avg_ms"] for r in rs]), med([r["p99_ms"] for r in rs]))
                   if wl == "produce" else "-")
            print("| %s | %s | %.1f (%s) | %.0f | %s |" % (
                wl, path, med([r["mb_s"] for r in rs]), ", ".join("%.1f" % r["mb_s"] for r in rs),
                med([r["records_s"] for r in rs]), lat))
    def mb(wl, path):
        return med([r["mb_s"] for r in tp[(wl, path)]])
    for num, den in RATIOS:
        if num in o.paths and den in o.paths:
            print("\nThroughput %s/%s: produce **%.3f**, consume **%.3f**" % (
                num, den, mb("produce", num) / mb("produce", den), mb("consume", num) / mb("consume", den)),
                end="")
    print("\n\n### Real Apache Kafka %s: recovery from a leader move\n" % kafka_cluster.DEFAULT_VERSION)
    print("One partition (RF 3), an idempotent producer (acks=all) at %d msg/s; 3 s in, the leader moves "
          "(reorder + PREFERRED election through the controller, epoch +1); %d moves per client and path, "
          "alternating. Java: ms from the move to the acknowledgement and to the consumer's fetch of the first "
          "record written under the new epoch. librdkafka: ms from the move to the first acknowledgement by "
          "the new leader (its timeline names the broker).\n" % (o.rate, o.moves))
    print("| Client | Path | first ack, new leader: median [each] (ms) | first fetch, new epoch: median (ms) | "
          "longest delivery: median (ms) | errors |")
    print("|---|---|---|---|---|---|")
    for client in ("Java", "librdkafka"):
        for path in o.paths:
            rs = mv.get((client, path))
            if not rs:
                continue
            print("| %s | %s | %.0f [%s] | %s | %.0f | %d |" % (
                client, path, med([r["first_new_ack_ms"] for r in rs]),
                ", ".join("%.0f" % r["first_new_ack_ms"] for r in rs),
                "%.0f" % med([r["first_new_fetch_ms"] for r in rs]) if client == "Java" else "-",
                med([r["max_latency_ms"] for r in rs]), sum(r["errors"] for r in rs)))
    # No Java paragraphs when only librdkafka moved (--rdkafka-only).
    java = ("Java", o.paths[0]) in mv
    if java: print("\nJava, the first record written under the new epoch (ms after the move): sent / acknowledged / "
          "fetched, per move:")
    for path in (o.paths if java else []):
        print("- %s: %s" % (path, "; ".join("%.0f / %.0f / %.0f (election done at %.0f)" % (
            r["first_new_sent_ms"], r["first_new_ack_ms"], r["first_new_fetch_ms"], r["move_ms"])
            for r in mv[("Java", path)])))
    if java: print("\nJava consumer across the move (ms; in brackets the same window 2 s earlier, nothing moving): "
          "longest gap between consecutive fetched records from 100 ms before the move to 1 s after, and "
          "the longest time from a record's acknowledgement to its fetch in that window, per move:")
    for path in (o.paths if java else []):
        print("- %s: %s" % (path, "; ".join("gap %.0f (%.0f), ack to fetch %.0f (%.0f)" % (
            r["fetch_gap_ms"], r["fetch_gap_control_ms"], r["fetch_delay_ms"], r["fetch_delay_control_ms"])
            for r in mv[("Java", path)])))
    if java: print("\nJava consumer gap across the move, over all moves per path (ms): median / max, "
          "in brackets the same for the window 2 s earlier:")
    for path in (o.paths if java else []):
        rs = mv[("Java", path)]

        def spread(key):
            xs = [r[key] for r in rs]
            return "%.0f / %.0f" % (med(xs), max(xs))

        print("- %s (%d moves): gap %s (%s), ack to fetch %s (%s)" % (
            path, len(rs), spread("fetch_gap_ms"), spread("fetch_gap_control_ms"),
            spread("fetch_delay_ms"), spread("fetch_delay_control_ms")))
    kafka_python_report(mv, o)
    if java: print("\nJava producer across the move (ms): the longest delivery among records sent from 100 ms "
          "before the move to 100 ms after (in brackets the same 2 s earlier, nothing moving), and "
          "acknowledged records stored at a lower offset than one sent before them, per move:")
    for path in (o.paths if java else []):
        print("- %s: %s" % (path, "; ".join("%.0f (%.0f), %d out of order" % (
            r["longest_across_ms"], r["longest_control_ms"], r["offsets_out_of_order"])
            for r in mv[("Java", path)])))
    gated = [p for p in o.paths if java and "reroutes_delivered" in mv[("Java", p)][0]]
    if gated: print("\nepochgate's own part in each Java move (its counters before and after the move): "
                    "rerouted writes delivered / fallen back, Produce partitions it fenced, runs refused "
                    "across the takeover resent / all, the producer's errors:")
    for path in gated:
        print("- %s: %s" % (path, "; ".join("%d / %d, %d, %d / %d, %d" % (
            r["reroutes_delivered"], r["reroutes_fell_back"], r["fenced_partitions"], r["gaps_resent"],
            r["gaps"], r["errors"]) for r in mv[("Java", path)])))
    for client in ("Java", "librdkafka"):
        for num, den in RATIOS:
            if (client, num) in mv and (client, den) in mv:
                ratio = med([r["first_new_ack_ms"] for r in mv[(client, num)]]) / max(
                    1e-9, med([r["first_new_ack_ms"] for r in mv[(client, den)]]))
                print("\n%s first ack after the move, %s/%s: **%.2f**" % (client, num, den, ratio), end="")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--work-dir", default="",
                    help="where the cluster, logs and results go (default BUILD_DIR/bench-real-kafka)")
    ap.add_argument("--paths", default="direct,haproxy,epochgate",
                    help="comma-separated subset of direct, haproxy, epochgate")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--moves", type=int, default=3)
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--timeline-dir", default="")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--java-only", action="store_true",
                    help="moves: the Java client only (no librdkafka move per path)")
    ap.add_argument("--rdkafka-only", action="store_true",
                    help="moves: librdkafka only (no Java move per path)")
    ap.add_argument("--rdkafka-debug", default="",
                    help="librdkafka debug contexts for its moves (e.g. broker,topic,msg,eos,protocol), "
                         "logged to WORK_DIR/rd-PATH-N.rdkafka.log")
    ap.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting for the cluster (repeatable), e.g. replica.fetch.wait.max.ms=50 "
                         "to take the followers' long poll out of a move's acks=all wait")
    ap.add_argument("--kafka-python", default="",
                    help="comma-separated kafka-python consumers to run beside each Java move (kafka-python: "
                         "Debian's 2.0.2; kafka-python-3: the client matrix's 3.x venv), each reported like the "
                         "Java consumer with loss, duplicates and order against the partition")
    ap.add_argument("--kafka-python-debug", action="store_true",
                    help="the kafka-python consumers' fetcher, metadata and request logs at DEBUG, stamped "
                         "CLOCK_MONOTONIC ns, in WORK_DIR/kp-PATH-N-CLIENT.log")
    ap.add_argument("--java-log-config", default="",
                    help="log4j2 properties file for the Java clients (default: the tools' own)")
    o = ap.parse_args()
    global JAVA_LOG_CONFIG
    JAVA_LOG_CONFIG = o.java_log_config
    o.paths = o.paths.split(",")
    o.kafka_python = [k for k in o.kafka_python.split(",") if k]
    if set(o.kafka_python) - (set(lmc.CLIENTS) - {"librdkafka"}):
        ap.error("--kafka-python: a subset of %s" % ", ".join(sorted(set(lmc.CLIENTS) - {"librdkafka"})))
    if o.kafka_python and o.rdkafka_only:
        ap.error("--kafka-python runs beside the Java moves, not with --rdkafka-only")
    if o.java_only and o.rdkafka_only:
        ap.error("--java-only and --rdkafka-only are exclusive")
    if not o.paths or set(o.paths) - {"direct", "haproxy", "epochgate", "epochgate-warm"}:
        ap.error("--paths: a subset of direct, haproxy, epochgate, epochgate-warm")
    demo = Demo(o.build_dir, o.work_dir or os.path.join(o.build_dir, "bench-real-kafka"))
    if o.timeline_dir:
        os.makedirs(o.timeline_dir, exist_ok=True)
    try:
        # The HAPROXY listener only when HAProxy is a path: without it the
        # cluster is exactly the tests' one.
        c = kafka_cluster.KafkaCluster(os.path.join(demo.workdir, "kafka"),
                                       proxy_listener="haproxy" in o.paths,
                                       extra_config=dict(kv.split("=", 1) for kv in o.broker_config))
        demo.on_close(c.stop)
        c.start()
        demo.say("cluster ready in %.1f s" % c.start_seconds)
        cfg = os.path.join(demo.workdir, "epochgate.yaml")
        with open(cfg, "w") as f:
            f.write("refresher:\n  interval_ms: 2000\npolicy:\n  rules:\n"
                    "    - topics: \"mv-*\"\n      mode: enforce\n      reroute: true\n")
        boots = {"direct": c.bootstrap}
        gates = {}
        if "epochgate" in o.paths:
            gate = harness.Epochgate(demo, c.bootstrap, ["--config", cfg])
            demo.on_close(gate.stop)
            boots["epochgate"] = gate.bootstrap
            gates["epochgate"] = gate
        if "epochgate-warm" in o.paths:
            # The same epochgate with upstream connections dialled ahead
            # (limits.warm_upstreams_per_broker 1, off by default): a new
            # client connection takes one instead of waiting for its dial.
            warm = os.path.join(demo.workdir, "epochgate-warm.yaml")
            with open(cfg) as src, open(warm, "w") as f:
                f.write(src.read() + "limits:\n  warm_upstreams_per_broker: 1\n")
            gate_warm = harness.Epochgate(demo, c.bootstrap, ["--config", warm],
                                          name="epochgate-warm")
            demo.on_close(gate_warm.stop)
            boots["epochgate-warm"] = gate_warm.bootstrap
            gates["epochgate-warm"] = gate_warm
        if "haproxy" in o.paths:
            hap = HAProxy(demo.workdir, c.proxy_routes())
            demo.on_close(hap.stop)
            hap.start()
            boots["haproxy"] = hap.bootstrap
            demo.say("haproxy: bootstrap %s, brokers %s" % (hap.bootstrap, c.proxy_routes()))
        prefix = c.prefix
        tp = None if o.skip_throughput else throughput(demo, c, boots, prefix, o)
        mv = moves(demo, c, boots, prefix, o, gates)
        if tp is None:
            tp = {(w, p): [{"mb_s": float("nan"), "records_s": float("nan"), "avg_ms": float("nan"),
                            "p99_ms": float("nan")}] for w in ("produce", "consume") for p in o.paths}
        with open(os.path.join(demo.workdir, "results.json"), "w") as f:
            json.dump({"throughput": {"%s/%s" % k: v for k, v in tp.items()},
                       "moves": {"%s/%s" % k: v for k, v in mv.items()}}, f, indent=1)
        report(tp, mv, o, c)
        print("\nCommand: /usr/bin/python3 bench/real_kafka.py --build-dir %s --rounds %d --records %d "
              "--record-size %d --moves %d --rate %d --paths %s" % (o.build_dir, o.rounds, o.records,
                                                                    o.record_size, o.moves, o.rate,
                                                                    ",".join(o.paths))
              + "".join(" --broker-config " + kv for kv in o.broker_config)
              + (" --kafka-python " + ",".join(o.kafka_python) if o.kafka_python else ""))
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

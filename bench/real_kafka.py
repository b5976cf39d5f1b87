#!/usr/bin/env python3
"""Benchmarks on a real Apache Kafka 4.4.0 cluster (tools/kafka/, 1 KRaft
controller + 3 brokers on loopback), straight at the brokers and through
epochgate in the same run, reported as ratios. Not a test: run by hand, then
copy the printed Markdown into bench/RESULTS.md.

1. Throughput: Kafka's own ProducerPerformance (acks=all) and
   ConsumerPerformance, direct and through epochgate, alternating, --rounds
   times each; medians and the epochgate/direct ratio.
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

    /usr/bin/python3 bench/real_kafka.py --build-dir build [--rounds 3] [--moves 3]

epochgate runs with its defaults plus `refresher.interval_ms: 2000` and an
enforce rule with rerouting on the move topics (as the demo). The machine is
shared: the figures are ratios within one run, never absolute targets.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "realkafka"))
sys.path.insert(0, os.path.join(ROOT, "tools"))  # demo.py: the Demo runner
import realkafka_lib as rk  # noqa: E402
from realkafka_lib import harness, kafka_cluster  # noqa: E402
from demo import Demo  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PERF_RESULT = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
                         r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th")


def java(prefix, main, args, timeout=600, classes=None):
    cp = kafka_cluster.classpath(prefix, *([classes] if classes else []))
    r = subprocess.run(["java", "-Xmx512m", kafka_cluster.log_option(prefix, tools=True), "-cp", cp, main] + args,
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


def throughput(demo, c, gate, prefix, o):
    rows = {("produce", p): [] for p in ("direct", "epochgate")}
    rows.update({("consume", p): [] for p in ("direct", "epochgate")})
    for r in range(o.rounds):
        for path, bootstrap in (("direct", c.bootstrap), ("epochgate", gate.bootstrap)):
            topic = rk.create_topic(c, "perf-%s-%d" % (path, r))
            rows[("produce", path)].append(producer_perf(prefix, bootstrap, topic, o.records, o.record_size))
            rows[("consume", path)].append(consumer_perf(prefix, bootstrap, topic, o.records,
                                                         "perf-g-%s-%d" % (path, r)))
            demo.say("round %d %s: produce %.1f MB/s, consume %.1f MB/s" % (
                r + 1, path, rows[("produce", path)][-1]["mb_s"], rows[("consume", path)][-1]["mb_s"]))
    return rows


def java_move(c, gate, prefix, classes, bootstrap, topic, o, timeline):
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
        "--acks", "all", "--duration-s", "8", "--rate", str(o.rate), "--timeline", timeline], name)
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


def moves(demo, c, gate, prefix, o):
    classes = kafka_cluster.compile_java(prefix, [os.path.join(HERE, "real_kafka", "MoveTimeline.java")])
    out = {}
    for i in range(o.moves):
        for path, bootstrap in (("direct", c.bootstrap), ("epochgate", gate.bootstrap)):
            topic = rk.create_topic(c, "mv-java-%s-%d" % (path, i), partitions=1)
            tl = os.path.join(o.timeline_dir, "java-%s-%d.csv" % (path, i)) if o.timeline_dir else None
            r = java_move(c, gate, prefix, classes, bootstrap, topic, o, tl)
            out.setdefault(("Java", path), []).append(r)
            demo.say("Java %s move %d: %s" % (path, i + 1, r))
            topic = rk.create_topic(c, "mv-rd-%s-%d" % (path, i), partitions=1)
            r = rdkafka_move(demo, c, bootstrap, topic, o, "rd-%s-%d" % (path, i))
            out.setdefault(("librdkafka", path), []).append(r)
            demo.say("librdkafka %s move %d: %s" % (path, i + 1, r))
    return out


def med(xs):
    xs = [x for x in xs if x is not None and x >= 0]
    return statistics.median(xs) if xs else float("nan")


def report(tp, mv, o, c):
    print("\n### Real Apache Kafka %s: throughput (Kafka's ProducerPerformance / ConsumerPerformance)\n"
          % kafka_cluster.DEFAULT_VERSION)
    print("%d records of %d bytes per run, acks=all, linger.ms=5, batch.size=131072; topic of 3 partitions "
          "(RF 3, min.insync.replicas=2); %d runs per path, alternating; medians.\n" % (
              o.records, o.record_size, o.rounds))
    print("| Workload | Path | MB/s (runs) | records/s | latency avg / p99 (ms) |")
    print("|---|---|---|---|---|")
    for wl in ("produce", "consume"):
        for path in ("direct", "epochgate"):
            rs = tp[(wl, path)]
            lat = ("%.1f / %.0f" % (med([r["avg_ms"] for r in rs]), med([r["p99_ms"] for r in rs]))
                   if wl == "produce" else "-")
            print("| %s | %s | %.1f (%s) | %.0f | %s |" % (
                wl, path, med([r["mb_s"] for r in rs]), ", ".join("%.1f" % r["mb_s"] for r in rs),
                med([r["records_s"] for r in rs]), lat))
    for wl in ("produce", "consume"):
        ratio = med([r["mb_s"] for r in tp[(wl, "epochgate")]]) / med([r["mb_s"] for r in tp[(wl, "direct")]])
        print("\n%s throughput epochgate/direct: **%.3f**" % (wl.capitalize(), ratio), end="")
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
        for path in ("direct", "epochgate"):
            rs = mv[(client, path)]
            print("| %s | %s | %.0f [%s] | %s | %.0f | %d |" % (
                client, path, med([r["first_new_ack_ms"] for r in rs]),
                ", ".join("%.0f" % r["first_new_ack_ms"] for r in rs),
                "%.0f" % med([r["first_new_fetch_ms"] for r in rs]) if client == "Java" else "-",
                med([r["max_latency_ms"] for r in rs]), sum(r["errors"] for r in rs)))
    print("\nJava, the first record written under the new epoch (ms after the move): sent / acknowledged / "
          "fetched, per move:")
    for path in ("direct", "epochgate"):
        print("- %s: %s" % (path, "; ".join("%.0f / %.0f / %.0f (election done at %.0f)" % (
            r["first_new_sent_ms"], r["first_new_ack_ms"], r["first_new_fetch_ms"], r["move_ms"])
            for r in mv[("Java", path)])))
    for client in ("Java", "librdkafka"):
        ratio = med([r["first_new_ack_ms"] for r in mv[(client, "epochgate")]]) / max(
            1e-9, med([r["first_new_ack_ms"] for r in mv[(client, "direct")]]))
        print("\n%s first ack after the move, epochgate/direct: **%.2f**" % (client, ratio), end="")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--moves", type=int, default=3)
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--timeline-dir", default="")
    ap.add_argument("--skip-throughput", action="store_true")
    o = ap.parse_args()
    demo = Demo(o.build_dir)
    demo.workdir = os.path.join(demo.build_dir, "bench-real-kafka")
    os.makedirs(demo.workdir, exist_ok=True)
    if o.timeline_dir:
        os.makedirs(o.timeline_dir, exist_ok=True)
    try:
        c = kafka_cluster.KafkaCluster(os.path.join(demo.workdir, "kafka"))
        demo.on_close(c.stop)
        c.start()
        demo.say("cluster ready in %.1f s" % c.start_seconds)
        cfg = os.path.join(demo.workdir, "epochgate.yaml")
        with open(cfg, "w") as f:
            f.write("refresher:\n  interval_ms: 2000\npolicy:\n  rules:\n"
                    "    - topics: \"mv-*\"\n      mode: enforce\n      reroute: true\n")
        gate = harness.Epochgate(demo, c.bootstrap, ["--config", cfg])
        demo.on_close(gate.stop)
        prefix = c.prefix
        tp = None if o.skip_throughput else throughput(demo, c, gate, prefix, o)
        mv = moves(demo, c, gate, prefix, o)
        if tp is None:
            tp = {(w, p): [{"mb_s": float("nan"), "records_s": float("nan"), "avg_ms": float("nan"),
                            "p99_ms": float("nan")}] for w in ("produce", "consume") for p in ("direct", "epochgate")}
        with open(os.path.join(demo.workdir, "results.json"), "w") as f:
            json.dump({"throughput": {"%s/%s" % k: v for k, v in tp.items()},
                       "moves": {"%s/%s" % k: v for k, v in mv.items()}}, f, indent=1)
        report(tp, mv, o, c)
        print("\nCommand: /usr/bin/python3 bench/real_kafka.py --build-dir %s --rounds %d --records %d "
              "--record-size %d --moves %d --rate %d" % (o.build_dir, o.rounds, o.records, o.record_size,
                                                          o.moves, o.rate))
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bench/kafka_load/reroute_soak.py: the rerouting soak. Real producers write
through epochgate with rerouting on while the harness moves a partition
leader every `--move-every` seconds for `--duration` seconds (10 minutes by
default; `--duration 60` is the smoke check). At the end every partition is
read back straight from the cluster and the run reports acknowledged messages
lost, duplicates, messages stored out of the order one producer sent them,
delivery latency (send to acknowledgement) p50/p99/max per producer, the first
acknowledgement after each move, epochgate's RSS and open descriptors at the
start, the end and their maximum, and its rerouting counters.

It owns nothing of the product and must never tell epochgate about a move:
the mock cluster (tools/epochgate-mockcluster, librdkafka's
rd_kafka_mock_partition_set_leader) is the only thing the harness changes.
There are no broker bounces, so every duplicate counts.

  bench/kafka_load/reroute_soak.py --build build [--duration 600] \
      [--move-every 10] [--rate 1000] [--results bench/RESULTS.md] [--no-reroute]

Topic `s` has two partitions (replication 3); each producer sends message i
to partition i % 2, so one ProduceRequest usually carries both partitions and
a move of one of them splits it. Moves alternate between the partitions.
Producers (their own processes, default settings): librdkafka 2.15.1
idempotent and not (python3-confluent-kafka with LD_LIBRARY_PATH);
`--old-clients` adds Debian's librdkafka 2.0.2 and kafka-python 2.0.2.

Without rerouting in the build (epochgate refuses the reroute keys) the soak
says so and exits 2, unless `--no-reroute` runs it with rerouting off.
Loopback only; every wait is bounded. Bench tooling, never part of the test
suite.
"""

import argparse
import array
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import leader_move_clients as lm  # noqa: E402

# A producer for long runs: message i goes to partition i % 2 with value
# "TAG:i"; times are kept in arrays (not dicts) so 600,000 messages stay small.
# Output: OUT.sent / OUT.ack (int64 ns, 0 = no answer), OUT.ok (1 ok, 2
# error), OUT.json (error kinds, error_cb events, unflushed).
CONFLUENT_SOAK = r"""
import array, json, sys, time
from confluent_kafka import Producer
bootstrap, conf, seconds, rate, tag, out = (sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]),
                                             float(sys.argv[4]), sys.argv[5], sys.argv[6])
n = int(seconds * rate) + 1
sent, ack, ok = array.array('q', [0]) * n, array.array('q', [0]) * n, array.array('b', [0]) * n
off = array.array('q', [-1]) * n
kinds, client_errors = {}, []
def on_error(err):
    client_errors.append((time.monotonic_ns(), err.name(), bool(err.fatal())))
conf['bootstrap.servers'] = bootstrap
conf['error_cb'] = on_error
p = Producer(conf)
def dr(err, msg):
    i = int(msg.value().split(b':')[1])
    ack[i] = time.monotonic_ns()
    ok[i] = 1 if err is None else 2
    if err is None:
        off[i] = msg.offset()
    if err is not None:
        kinds[err.name()] = kinds.get(err.name(), 0) + 1
period = int(1e9 / rate)
print('ready', flush=True)
start = time.monotonic_ns()
end = start + int(seconds * 1e9)
i = 0
while i < n:
    now = time.monotonic_ns()
    if now >= end:
        break
    due = start + i * period
    if now >= due:
        sent[i] = time.monotonic_ns()
        while True:
            try:
                p.produce('s', value=('%s:%d' % (tag, i)).encode(), partition=i % 2, on_delivery=dr)
                break
            except BufferError:
                p.poll(0.001)
        i += 1
    p.poll(0)
    if time.monotonic_ns() < due:
        time.sleep(0.0002)
left = p.flush(60)
sent[:i].tofile(open(out + '.sent', 'wb')); ack[:i].tofile(open(out + '.ack', 'wb'))
ok[:i].tofile(open(out + '.ok', 'wb')); off[:i].tofile(open(out + '.off', 'wb'))
json.dump({'kinds': kinds, 'client_errors': client_errors, 'unflushed': left, 'count': i},
          open(out + '.json', 'w'))
"""

KAFKA_PYTHON_SOAK = r"""
import array, json, sys, time
from kafka import KafkaProducer
bootstrap, conf, seconds, rate, tag, out = (sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]),
                                             float(sys.argv[4]), sys.argv[5], sys.argv[6])
n = int(seconds * rate) + 1
sent, ack, ok = array.array('q', [0]) * n, array.array('q', [0]) * n, array.array('b', [0]) * n
off = array.array('q', [-1]) * n
kinds = {}
p = KafkaProducer(bootstrap_servers=bootstrap, **conf)
def good(i):
    def f(md):
        ack[i] = time.monotonic_ns(); ok[i] = 1; off[i] = md.offset
    return f
def bad(i):
    def f(e):
        ack[i] = time.monotonic_ns(); ok[i] = 2
        kinds[type(e).__name__] = kinds.get(type(e).__name__, 0) + 1
    return f
period = int(1e9 / rate)
print('ready', flush=True)
start = time.monotonic_ns()
end = start + int(seconds * 1e9)
i = 0
while i < n:
    now = time.monotonic_ns()
    if now >= end:
        break
    due = start + i * period
    if now >= due:
        sent[i] = time.monotonic_ns()
        f = p.send('s', value=('%s:%d' % (tag, i)).encode(), partition=i % 2)
        f.add_callback(good(i)); f.add_errback(bad(i))
        i += 1
    else:
        time.sleep(0.0002)
p.flush(60)
p.close(10)
sent[:i].tofile(open(out + '.sent', 'wb')); ack[:i].tofile(open(out + '.ack', 'wb'))
ok[:i].tofile(open(out + '.ok', 'wb')); off[:i].tofile(open(out + '.off', 'wb'))
json.dump({'kinds': kinds, 'client_errors': [], 'unflushed': 0, 'count': i},
          open(out + '.json', 'w'))
"""

# tag, label, runner, config, LD_LIBRARY_PATH
PRODUCERS = [
    ("I", "librdkafka 2.15.1 idempotent", "confluent", {"enable.idempotence": True}, lm.RDK_2151),
    ("N", "librdkafka 2.15.1", "confluent", {}, lm.RDK_2151),
]
OLD_PRODUCERS = [
    ("D", "librdkafka 2.0.2 (Debian)", "confluent", {}, None),
    ("K", "kafka-python 2.0.2 (Debian)", "kafka-python", {}, None),
]


def proc_stats(pid):
    """(RSS in MiB, open descriptors) of a live process, from /proc."""
    rss = 0.0
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024.0
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def load_arrays(out):
    def arr(kind, suffix):
        a = array.array(kind)
        with open(out + suffix, "rb") as fh:
            a.frombytes(fh.read())
        return a
    with open(out + ".json") as fh:
        meta = json.load(fh)
    return arr("q", ".sent"), arr("q", ".ack"), arr("b", ".ok"), arr("q", ".off"), meta


def analyse(tag, label, out, stored, low, moves):
    """Loss, duplicates, order and latency of one producer from its arrays and
    the partitions read back."""
    sent, ack, ok, off, meta = load_arrays(out)
    n = len(sent)
    where = {}      # message -> times stored
    ooo = 0
    for part, values in stored.items():
        high = -1
        for v in values:
            t, _, i = v.partition(":")
            if t != tag:
                continue
            i = int(i)
            where[i] = where.get(i, 0) + 1
            if i < high:
                ooo += 1
            high = max(high, i)
    acked = [i for i in range(n) if ok[i] == 1]
    # The mock cluster keeps a bounded log per partition (it drops its oldest
    # message sets), so a message acknowledged at an offset below the
    # partition's log start offset at read-back is gone by retention, not
    # lost: it is counted apart and left out of the loss figure.
    evicted = [i for i in acked if 0 <= off[i] < low[i % 2]]
    gone = set(evicted)
    lost = sum(1 for i in acked if i not in where and i not in gone)
    dup = sum(c - 1 for c in where.values() if c > 1)
    lat = sorted((ack[i] - sent[i]) / 1e6 for i in acked)
    # First acknowledgement after each move of a message handed over after the
    # move command returned, from the command's start (see leader_move_clients).
    # Only messages to the partition that moved count: the other partition's
    # acknowledgements go on undisturbed and would hide the move.
    first = []
    j0 = 0
    for origin, threshold, part in moves:
        while j0 < n and sent[j0] < threshold:
            j0 += 1
        best = None
        # Messages are sent in order; the first ack is among the first few
        # hundred after the threshold unless recovery takes longer.
        for i in range(j0, n):
            if i % 2 != part:
                continue
            if ok[i] == 1 and (best is None or ack[i] < best):
                best = ack[i]
            if best is not None and sent[i] > best:
                break
        first.append((best - origin) / 1e6 if best is not None else float("inf"))
    return {
        "producer": label, "sent": n, "acked": len(acked), "evicted": len(evicted),
        "errors": sum(1 for i in range(n) if ok[i] == 2), "error_kinds": meta["kinds"],
        "unanswered": sum(1 for i in range(n) if ok[i] == 0),
        "client_errors": meta["client_errors"], "lost": lost, "duplicated": dup,
        "out_of_order": ooo,
        "p50_ms": lm.percentile(lat, 50), "p99_ms": lm.percentile(lat, 99),
        "max_ms": lat[-1] if lat else float("nan"),
        "first_ack_median_ms": statistics.median(first) if first else float("nan"),
        "first_ack_p99_ms": lm.percentile(first, 99),
    }


def run(args, tmp):
    producers = PRODUCERS + (OLD_PRODUCERS if args.old_clients else [])
    if args.producers:
        producers = [p for p in producers if p[0] in args.producers]
    mock, direct = lm.start_mock(args.build, "s:2:3")
    eg = None
    procs = []
    samples = []
    try:
        mock.command("leader s 0 1")
        mock.command("leader s 1 1")
        leaders = [1, 1]
        path = "epochgate" if args.no_reroute else "epochgate reroute"
        eg, bootstrap, admin = lm.start_epochgate(args.build, tmp, direct, path,
                                                  args.reroute_yaml)
        idle_stats = proc_stats(eg.p.pid)
        for tag, label, runner, conf, libpath in producers:
            env = dict(os.environ)
            if libpath:
                env["LD_LIBRARY_PATH"] = libpath
            script = CONFLUENT_SOAK if runner == "confluent" else KAFKA_PYTHON_SOAK
            out = os.path.join(tmp, f"producer-{tag}")
            p = subprocess.Popen([lm.PY, "-c", script, bootstrap, json.dumps(conf),
                                  str(args.duration), str(args.rate), tag, out],
                                 stdout=subprocess.PIPE, text=True, env=env)
            procs.append((tag, label, out, p))
        for _, label, _, p in procs:
            if not p.stdout.readline().startswith("ready"):
                raise RuntimeError(f"producer {label} did not start")
        t0 = time.monotonic_ns()
        # After the warm-up: every producer is connected, so the start figures
        # include their sessions.
        time.sleep(min(args.warm, args.duration / 2))
        start_stats = proc_stats(eg.p.pid)
        samples.append(start_stats)
        moves = []
        k = 0
        while True:
            due = t0 + int((args.warm + k * args.move_every) * 1e9)
            if due > t0 + int((args.duration - 1) * 1e9):
                break
            while time.monotonic_ns() < due:
                time.sleep(0.002)
            part = k % 2
            leaders[part] = leaders[part] % 3 + 1
            moves.append(lm.move_leader(mock, "s", part, leaders[part]) + (part,))
            samples.append(proc_stats(eg.p.pid))
            if args.keep:
                with open(os.path.join(tmp, "metrics.jsonl"), "a") as fh:
                    m = lm.scrape(admin)
                    fh.write(json.dumps({"t_s": (time.monotonic_ns() - t0) / 1e9,
                                         "move": k, "partition": part, "to": leaders[part],
                                         "metrics": {f"{n}{dict(sorted(l))}": v
                                                     for (n, l), v in m.items()
                                                     if n.startswith(("epochgate_reroute",
                                                                      "epochgate_fenced",
                                                                      "epochgate_metadata_ref",
                                                                      "epochgate_hints"))
                                                     and v}}) + "\n")
            k += 1
        for _, label, _, p in procs:
            p.wait(timeout=args.duration + 120)
            if p.returncode != 0:
                raise RuntimeError(f"producer {label} exited {p.returncode}")
        end_stats = proc_stats(eg.p.pid)
        samples.append(end_stats)
        metrics = lm.scrape(admin)
        stored = lm.read_back(direct, tmp, "s", 2)
        with open(os.path.join(tmp, "readback.json")) as fh:
            low = {int(k): v["low"] for k, v in json.load(fh).items()}
    finally:
        for _, _, _, p in procs:
            if p.poll() is None:
                p.kill()
        if eg:
            eg.close()
        mock.close()
    rows = [analyse(tag, label, out, stored, low, moves) for tag, label, out, _ in procs]
    return {"rows": rows, "moves": len(moves), "path": path,
            "move_command_ms_max": max((a - b) / 1e6 for b, a, _ in moves) if moves else 0,
            "rss_mib": (start_stats[0], end_stats[0], max(s[0] for s in samples)),
            "fds": (start_stats[1], end_stats[1], max(s[1] for s in samples)),
            "idle": idle_stats,
            "reroute": lm.reroute_summary(metrics)}


def table(res, command, args, load):
    rr = res["reroute"]
    fell = ", ".join(f"{k or '?'} {v}" for k, v in sorted(rr.get("fell_back", {}).items()))
    lines = [
        "<!-- reroute-soak:begin (bench/kafka_load/reroute_soak.py) -->",
        f"## Rerouting soak: a leader move every {args.move_every:g} s for "
        + (f"{args.duration / 60:g} min" if args.duration >= 120 else f"{args.duration:g} s"),
        "",
        f"Produced by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"Each producer process sends {args.rate:g} messages/s (message i to partition i % 2) "
        f"to topic `s` (2 partitions, replication 3) of librdkafka 2.15.1's mock cluster "
        f"through epochgate ({res['path']}), while the harness moved one partition's leader "
        f"every {args.move_every:g} s ({res['moves']} moves, alternating partitions; epochgate "
        f"is told nothing). No broker bounces, so every duplicate counts. Lost = acknowledged "
        f"but not in the partitions read back directly; ooo = stored after a later message "
        f"of the same producer; evicted = acknowledged below the log start offset at "
        f"read-back (the mock keeps a bounded log: dropped by retention, not counted as lost, "
        f"and dup/ooo only see what is left); latency = send to acknowledgement of every acknowledged "
        f"message; first ack = move to the first acknowledgement of a message sent after "
        f"it. Load average at start {load[0]}, at end {load[1]} on {os.cpu_count()} cores "
        f"shared with other work.",
        "",
        "| producer | sent | acked | errors | lost | evicted | dup | ooo | latency p50 ms | "
        "p99 ms | max ms | first ack after move median ms | p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        errs = str(r["errors"])
        if r["errors"]:
            errs += " (" + ", ".join(f"{k} {v}" for k, v in sorted(r["error_kinds"].items())) + ")"
        if r["client_errors"]:
            fatal = sum(1 for e in r["client_errors"] if e[2])
            errs += (f" + {len(r['client_errors'])} error_cb "
                     f"({', '.join(sorted({e[1] for e in r['client_errors']}))}; {fatal} fatal)")
        if r["unanswered"]:
            errs += f" + {r['unanswered']} unanswered"
        lines.append(
            f"| {r['producer']} | {r['sent']} | {r['acked']} | {errs} | {r['lost']} | "
            f"{r['evicted']} | "
            f"{r['duplicated']} | {r['out_of_order']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
            f"{r['max_ms']:.1f} | {r['first_ack_median_ms']:.1f} | {r['first_ack_p99_ms']:.1f} |")
    rss, fds = res["rss_mib"], res["fds"]
    lines += [
        "",
        f"epochgate: RSS {res['idle'][0]:.1f} MiB before the producers connected, "
        f"{rss[0]:.1f} MiB at start (after {args.warm:g} s warm-up), {rss[1]:.1f} MiB at end "
        f"(producers closed), {rss[2]:.1f} MiB max; open descriptors {res['idle'][1]} before "
        f"the producers, {fds[0]} at start, {fds[1]} at end, {fds[2]} max. "
        + (f"Reroutes delivered {rr['delivered']}, fell back {sum(rr['fell_back'].values())}"
           f"{' (' + fell + ')' if fell else ''}, held for order {rr['held']}"
           + (f", added mean {rr['added_mean_ms']:.2f} ms" if rr.get('added_mean_ms') else "")
           + f"; epochgate learned of the moves from {rr['hints_rewritten']} rewritten hints "
             f"and {rr['refresh_urgent']} urgent refreshes."
           if rr.get("reroute_metrics") else "No rerouting metrics in this build."),
        "<!-- reroute-soak:end -->",
    ]
    return "\n".join(lines) + "\n"


def write_results(path, block):
    text = open(path).read() if os.path.exists(path) else ""
    begin, end = "<!-- reroute-soak:begin", "<!-- reroute-soak:end -->\n"
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        marker = "## Microbenchmarks"
        if marker in text:
            i = text.index(marker)
            text = text[:i] + block + "\n" + text[i:]
        else:
            text += "\n" + block
    with open(path, "w") as fh:
        fh.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--duration", type=float, default=600.0, help="seconds (60: smoke check)")
    ap.add_argument("--move-every", type=float, default=10.0, help="seconds between moves")
    ap.add_argument("--warm", type=float, default=5.0, help="seconds before the first move")
    ap.add_argument("--rate", type=float, default=1000.0, help="messages/s per producer")
    ap.add_argument("--old-clients", action="store_true",
                    help="add librdkafka 2.0.2 and kafka-python 2.0.2 producers")
    ap.add_argument("--no-reroute", action="store_true",
                    help="run through epochgate without rerouting (a baseline)")
    ap.add_argument("--reroute-yaml", help="epochgate config file for the rerouting run")
    ap.add_argument("--results", help="markdown file whose reroute-soak block is replaced")
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--producers", help="tags of the producers to run (I idempotent, N not, "
                    "D librdkafka 2.0.2, K kafka-python; default all that apply)")
    ap.add_argument("--keep", help="work directory to keep (producer arrays, epochgate.log)")
    args = ap.parse_args()
    command = shlex.join(["bench/kafka_load/reroute_soak.py"] + sys.argv[1:])
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="eg-reroute-soak-") as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        try:
            res = run(args, work)
        except lm.RerouteUnsupported as e:
            print(f"reroute soak skipped: this epochgate build refuses the rerouting config "
                  f"({e}); use --no-reroute for the baseline", file=sys.stderr)
            return 2
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    block = table(res, command, args, (load_start, load_end))
    print(block)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)
    if args.results:
        write_results(args.results, block)
    bad = any(r["lost"] or r["duplicated"] or r["out_of_order"] for r in res["rows"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

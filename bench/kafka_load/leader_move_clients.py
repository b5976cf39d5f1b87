#!/usr/bin/env python3
"""bench/kafka_load/leader_move_clients.py: the leader-move scenario for
several real producers, direct and through epochgate (rerouting off): the
baseline the rerouting work is measured against.

For each client, path (direct | epochgate enforcing) and cluster (librdkafka
2.15.1's mock cluster with its full Produce range, or capped at Produce v9:
no KIP-951 hints), one producer process sends one message per millisecond to
a one-partition topic (replication 3) while the harness moves the partition's
leader `--rounds` times, every `--interval` seconds. Per move it records the
first acknowledgement of a message sent after the move (move -> ack, ms);
at the end it reads the partition back directly from the cluster and counts
acknowledged messages lost, messages stored twice, and stored out of the
order they were sent. Medians and p99 are over the rounds.

Clients (each its own process, default settings unless noted):
  librdkafka 2.15.1 through Debian's python3-confluent-kafka with
  LD_LIBRARY_PATH (the same library the C++ bench links), idempotent and not;
  Debian's librdkafka 2.0.2 (python3-confluent-kafka as shipped);
  Debian's kafka-python 2.0.2 (python3-kafka).

  bench/kafka_load/leader_move_clients.py --build build [--rounds 10] \
      [--results bench/RESULTS.md]

Times: CLOCK_MONOTONIC, shared by the harness and the producer processes; an
acknowledgement is stamped when the client's callback runs (confluent-kafka:
at the next poll, within 1 ms). Loopback only; every wait is bounded. Bench
tooling, never part of the test suite.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

RDK_2151 = os.path.expanduser("~/.cache/epochgate/librdkafka-2.15.1/lib")
PY = "/usr/bin/python3"

CONFLUENT_PRODUCER = r"""
import json, sys, time
from confluent_kafka import Producer, libversion
bootstrap, conf, seconds, out = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
conf['bootstrap.servers'] = bootstrap
p = Producer(conf)
sent, acks = [], {}
def dr(err, msg):
    acks[int(msg.value())] = (time.monotonic_ns(), err is None, str(err) if err else '')
start = time.monotonic_ns()
print('ready', libversion()[0], flush=True)
i = 0
end = start + int(seconds * 1e9)
while True:
    now = time.monotonic_ns()
    if now >= end:
        break
    due = start + i * 1_000_000
    if now >= due:
        p.produce('m', value=str(i).encode(), partition=0, on_delivery=dr)
        sent.append(time.monotonic_ns())
        i += 1
    p.poll(0)
    if time.monotonic_ns() < due:
        time.sleep(0.0002)
left = p.flush(30)
json.dump({'sent': sent, 'acks': acks, 'unflushed': left}, open(out, 'w'))
"""

KAFKA_PYTHON_PRODUCER = r"""
import json, sys, time
from kafka import KafkaProducer
bootstrap, conf, seconds, out = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
p = KafkaProducer(bootstrap_servers=bootstrap, **conf)
sent, acks = [], {}
def ok(i):
    return lambda md: acks.__setitem__(i, (time.monotonic_ns(), True, ''))
def bad(i):
    return lambda e: acks.__setitem__(i, (time.monotonic_ns(), False, type(e).__name__))
start = time.monotonic_ns()
print('ready kafka-python', flush=True)
i = 0
end = start + int(seconds * 1e9)
while True:
    now = time.monotonic_ns()
    if now >= end:
        break
    due = start + i * 1_000_000
    if now >= due:
        f = p.send('m', value=str(i).encode(), partition=0)
        sent.append(time.monotonic_ns())
        f.add_callback(ok(i))
        f.add_errback(bad(i))
        i += 1
    else:
        time.sleep(0.0002)
p.flush(30)
p.close(10)
json.dump({'sent': sent, 'acks': acks, 'unflushed': 0}, open(out, 'w'))
"""

READ_BACK = r"""
import json, sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({'bootstrap.servers': sys.argv[1], 'group.id': 'readback', 'enable.auto.commit': False,
              'enable.partition.eof': True})
lo, hi = c.get_watermark_offsets(TopicPartition('m', 0), timeout=10)
c.assign([TopicPartition('m', 0, lo)])
values = []
while len(values) < hi - lo:
    m = c.poll(5)
    if m is None:
        break
    if m.error():
        if m.error().code() == -191:  # partition EOF
            break
        continue
    values.append(int(m.value()))
c.close()
json.dump({'values': values, 'high': hi, 'low': lo}, open(sys.argv[2], 'w'))
"""

# label, runner, config, LD_LIBRARY_PATH
CLIENTS = [
    ("librdkafka 2.15.1 idempotent", "confluent", {"enable.idempotence": True}, RDK_2151),
    ("librdkafka 2.15.1", "confluent", {}, RDK_2151),
    ("librdkafka 2.0.2 (Debian)", "confluent", {}, None),
    ("kafka-python 2.0.2 (Debian)", "kafka-python", {}, None),
]


class Child:
    """A child process with a line-oriented stdin/stdout, stopped at close()."""

    def __init__(self, argv, env=None, log=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=log or subprocess.DEVNULL, text=True, env=env)

    def line(self, timeout=20):
        out = []
        t = threading.Thread(target=lambda: out.append(self.p.stdout.readline()), daemon=True)
        t.start()
        t.join(timeout)
        if not out:
            raise RuntimeError(f"no line from {self.p.args[0]} in {timeout} s")
        return out[0].strip()

    def command(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()
        reply = self.line()
        if not reply.startswith("OK"):
            raise RuntimeError(f"{text}: {reply}")
        return reply

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except OSError:
                pass
            self.p.terminate()
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(timeout=5)


def percentile(values, q):
    if not values:
        return float("nan")
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(q / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def run_case(args, tmp, client, path, capped):
    label, runner, conf, libpath = client
    mock = Child([os.path.join(args.build, "tools/epochgate-mockcluster"), "--brokers", "3",
                  "--topic", "m:1:3"])
    eg = None
    producer = None
    try:
        first = mock.line().split()
        if len(first) != 2 or first[0] != "BOOTSTRAP":
            raise RuntimeError(f"mock cluster: {first}")
        direct = first[1]
        if capped:
            mock.command("apiversion 0 0 9")
        leader = 1
        mock.command(f"leader m 0 {leader}")
        bootstrap = direct
        if path == "epochgate":
            cfg = os.path.join(tmp, "epochgate.yaml")
            with open(cfg, "w") as fh:
                fh.write('policy:\n  default_mode: "enforce"\n')
            eg = Child([os.path.join(args.build, "proxy/epochgate"), "--bootstrap", direct,
                        "--listen", "127.0.0.1:0", "--broker-port-base", "0",
                        "--advertise-host", "127.0.0.1", "--admin", "127.0.0.1:0",
                        "--config", cfg, "--log-level", "warn"],
                       log=open(os.path.join(tmp, "epochgate.log"), "a"))
            ready = eg.line()
            fields = dict(w.split("=", 1) for w in ready.split() if "=" in w)
            if not ready.startswith("epochgate ready") or "bootstrap" not in fields:
                raise RuntimeError(f"epochgate: {ready}")
            bootstrap = fields["bootstrap"]
        out = os.path.join(tmp, "producer.json")
        seconds = args.warm + args.rounds * args.interval
        env = dict(os.environ)
        if libpath:
            env["LD_LIBRARY_PATH"] = libpath
        script = CONFLUENT_PRODUCER if runner == "confluent" else KAFKA_PYTHON_PRODUCER
        producer = subprocess.Popen([PY, "-c", script, bootstrap, json.dumps(conf), str(seconds),
                                     out], stdout=subprocess.PIPE, text=True, env=env)
        if not producer.stdout.readline().startswith("ready"):
            raise RuntimeError("producer did not start")
        t_start = time.monotonic_ns()
        moves = []
        for r in range(args.rounds):
            due = t_start + int((args.warm + r * args.interval) * 1e9)
            while time.monotonic_ns() < due:
                time.sleep(0.001)
            leader = leader % 3 + 1
            t_move = time.monotonic_ns()
            mock.command(f"leader m 0 {leader}")
            moves.append(t_move)
        producer.wait(timeout=seconds + 90)
        with open(out) as fh:
            prod = json.load(fh)
        rb = os.path.join(tmp, "readback.json")
        subprocess.run([PY, "-c", READ_BACK, direct, rb], timeout=60, check=True,
                       env=dict(os.environ, LD_LIBRARY_PATH=RDK_2151))
        with open(rb) as fh:
            stored = json.load(fh)["values"]
    finally:
        if producer and producer.poll() is None:
            producer.kill()
        if eg:
            eg.close()
        mock.close()

    sent = prod["sent"]
    acks = {int(k): v for k, v in prod["acks"].items()}
    first_ack = []
    for t_move in moves:
        # Any message sent after this move counts, even one sent after the
        # next move: a client slower than the interval shows its real time.
        best = None
        for i, t_sent in enumerate(sent):
            if t_sent < t_move:
                continue
            a = acks.get(i)
            if a and a[1] and (best is None or a[0] < best):
                best = a[0]
        first_ack.append((best - t_move) / 1e6 if best is not None else float("inf"))
    ok = {i for i, a in acks.items() if a[1]}
    errors = sum(1 for a in acks.values() if not a[1])
    unacked = len(sent) - len(acks)
    count = {}
    for v in stored:
        count[v] = count.get(v, 0) + 1
    lost = sum(1 for i in ok if i not in count)
    dup = sum(c - 1 for c in count.values() if c > 1)
    ooo, high = 0, -1
    for v in stored:
        if v < high:
            ooo += 1
        high = max(high, v)
    return {"client": label, "path": path, "capped": capped, "first_ack_ms": first_ack,
            "sent": len(sent), "errors": errors, "unacked": unacked, "lost": lost,
            "duplicated": dup, "out_of_order": ooo,
            "error_kinds": sorted({a[2] for a in acks.values() if not a[1]})}


def table(results, command, rounds, interval, load):
    lines = [
        "<!-- leader-move-clients:begin (bench/kafka_load/leader_move_clients.py) -->",
        "## Leader move, first acknowledgement after the move, by client (rerouting baseline)",
        "",
        f"Produced by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"One producer process per row sends one message per millisecond to a one-partition "
        f"topic (replication 3) of librdkafka 2.15.1's mock cluster while the harness moves the "
        f"partition's leader {rounds} times, every {interval:g} s. *first ack* = move to the "
        f"first acknowledgement of a message sent after the move, median and p99 over the "
        f"{rounds} moves (with 10 moves, p99 is the worst one; a recovery slower than the "
        f"interval is measured in full, past the next move). Lost = acknowledged but not in "
        f"the partition when read back directly; dup = stored more than once; ooo = stored "
        f"after a message sent later; errors = delivery errors reported to the application. "
        f"epochgate: enforcing, no rerouting (it does not exist yet). Clients at default "
        f"settings (kafka-python 2.0.2 defaults to acks=1 and retries=0). Load average at "
        f"start {load[0]}, at end {load[1]} on {os.cpu_count()} cores shared with other work.",
        "",
        "| cluster | client | path | first ack median ms | first ack p99 ms | sent | errors | "
        "lost | dup | ooo |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        f = [x for x in r["first_ack_ms"]]
        med = statistics.median(f) if f else float("nan")
        lines.append(
            f"| {'Produce <= v9 (no hints)' if r['capped'] else 'full (KIP-951 hints)'} | "
            f"{r['client']} | {r['path']} | {med:.1f} | {percentile(f, 99):.1f} | {r['sent']} | "
            f"{r['errors']}{' (' + ', '.join(r['error_kinds']) + ')' if r['errors'] else ''} | "
            f"{r['lost']} | {r['duplicated']} | {r['out_of_order']} |")
    lines.append("<!-- leader-move-clients:end -->")
    return "\n".join(lines) + "\n"


def write_results(path, block):
    text = open(path).read() if os.path.exists(path) else ""
    begin = "<!-- leader-move-clients:begin"
    end = "<!-- leader-move-clients:end -->\n"
    if begin in text and end in text:
        head = text[:text.index(begin)]
        tail = text[text.index(end) + len(end):]
        text = head + block + tail
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
    ap.add_argument("--build", required=True, help="build tree with proxy/epochgate and "
                    "tools/epochgate-mockcluster")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--interval", type=float, default=1.5, help="seconds between moves")
    ap.add_argument("--warm", type=float, default=1.5, help="seconds before the first move")
    ap.add_argument("--results", help="markdown file whose leader-move-clients block is "
                    "replaced (or inserted)")
    ap.add_argument("--json", help="write raw results here")
    ap.add_argument("--only", help="run only clients whose label contains this")
    args = ap.parse_args()
    command = "bench/kafka_load/leader_move_clients.py " + " ".join(sys.argv[1:])
    results = []
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for capped in (False, True):
        for client in CLIENTS:
            if args.only and args.only not in client[0]:
                continue
            for path in ("direct", "epochgate"):
                with tempfile.TemporaryDirectory(prefix="eg-leader-move-") as tmp:
                    r = run_case(args, tmp, client, path, capped)
                results.append(r)
                print(json.dumps({k: r[k] for k in ("client", "path", "capped", "errors",
                                                    "lost", "duplicated", "out_of_order")}
                                 | {"first_ack_ms": [round(x, 1) for x in r["first_ack_ms"]]}),
                      flush=True)
    load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
    block = table(results, command, args.rounds, args.interval, (load_start, load_end))
    print(block)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    if args.results:
        write_results(args.results, block)


if __name__ == "__main__":
    main()

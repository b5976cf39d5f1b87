"""bench/kafka_load/leader_move_consumer.py: the consumer side of the
leader-move bench (leader_move_clients.py --consumer). One consumer process
(librdkafka 2.15.1 through Debian's python3-confluent-kafka, or kafka-python,
Debian's or the client matrix's: --consumer-client) reads partition 0 of the
bench's topic from the beginning while the producer writes it and the leader
moves; it stamps every record's arrival (CLOCK_MONOTONIC, the clock of
the moves' stamps) and keeps its value. The harness then reports per move the
longest gap between two consecutive arrivals around the move (what an
application sees as "no records"), the same at instants where nothing moved,
and records lost, delivered twice or out of order against the partition read
back directly.

Why the fetch wait matters on the mock cluster: librdkafka 2.15.1's mock
answers a Fetch that finds no new data only after the request's MaxWait (new
data does not wake it, unlike a Kafka broker), so with librdkafka's default
fetch.wait.max.ms (500) one empty fetch makes a gap of up to 500 ms whether
or not anything moved. The bench therefore sets fetch.wait.max.ms to 10
(kafka-python: fetch_max_wait_ms 10, its default 500) unless --consumer-conf
says otherwise, so the gap measures the move.
Bench tooling, never part of the test suite.
"""

import bisect
import json
import os
import statistics

# librdkafka consumer settings the bench uses unless --consumer-conf overrides.
DEFAULT_CONF = {"fetch.wait.max.ms": 10}

CONSUMER = r"""
import json, sys, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
bootstrap, conf, seconds, out = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
conf.update({'bootstrap.servers': bootstrap, 'group.id': 'leader-move-bench',
             'enable.auto.commit': False, 'enable.partition.eof': False})
errors = []
conf['error_cb'] = lambda e: errors.append((time.monotonic_ns(), e.name()))
c = Consumer(conf)
c.assign([TopicPartition('m', 0, OFFSET_BEGINNING)])
print('ready', flush=True)
records = []  # (arrival ns, offset, value)
end = time.monotonic_ns() + int(seconds * 1e9)
while time.monotonic_ns() < end:
    for m in c.consume(num_messages=500, timeout=0.005):
        now = time.monotonic_ns()
        if m.error():
            errors.append((now, m.error().name()))
            continue
        records.append((now, m.offset(), int(m.value())))
c.close()
json.dump({'records': records, 'errors': errors}, open(out, 'w'))
"""

# The same for kafka-python (--consumer-client kafka-python: Debian's 2.0.2,
# Fetch v4 without leader epochs; kafka-python-3: the client matrix's 3.x,
# Fetch v12 with CurrentLeaderEpoch and LastFetchedEpoch). Neither takes a
# KIP-951 hint: both refresh metadata on a leader error. `conf` is
# KafkaConsumer's own keyword arguments; argv: bootstrap, conf, seconds (at
# most), output file (its name + ".stop" ends it early), then optionally
# "debug" and the topic (default m). With "debug" its
# fetcher, cluster metadata and client loggers write to stderr at DEBUG,
# each line stamped with CLOCK_MONOTONIC ns (the clock of the moves' stamps).
KAFKA_PYTHON_CONSUMER = r"""
import json, logging, os, sys, time
import kafka
from kafka import KafkaConsumer, TopicPartition
bootstrap, conf, seconds, out = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
topic = sys.argv[6] if len(sys.argv) > 6 else 'm'
if len(sys.argv) > 5 and sys.argv[5] == 'debug':
    class Mono(logging.Formatter):
        def format(self, record):
            return '%d %s %s' % (time.monotonic_ns(), record.name, record.getMessage())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Mono())
    for name in ('kafka.consumer.fetcher', 'kafka.cluster', 'kafka.client', 'kafka.conn'):
        logging.getLogger(name).setLevel(logging.DEBUG)
        logging.getLogger(name).addHandler(handler)
c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **conf)
tp = TopicPartition(topic, 0)
c.assign([tp])
c.seek_to_beginning(tp)
print('ready kafka-python', kafka.__version__, flush=True)
records, errors = [], []
end = time.monotonic_ns() + int(seconds * 1e9)
stop = out + '.stop'  # the harness's early end (real_kafka.py, once its producer is done)
while time.monotonic_ns() < end and not os.path.exists(stop):
    for batch in c.poll(timeout_ms=5, max_records=500).values():
        now = time.monotonic_ns()
        for m in batch:
            records.append((now, m.offset, int(m.value)))
c.close()
json.dump({'records': records, 'errors': errors, 'version': kafka.__version__}, open(out, 'w'))
"""

# The matrix's kafka-python 3.x venv (tools/clients/fetch-python.sh). It
# runs on the real cluster only (bench/real_kafka.py --kafka-python): it
# never bootstraps from librdkafka's mock, whose answer to its ApiVersions v4
# it cannot decode (tests/clients/results/mock.json).
KAFKA_PYTHON_3 = os.path.expanduser("~/.cache/epochgate/clients/python/kafka-python/bin/python")

# --consumer-client: (label for the tables, {version} filled from the run,
# interpreter, script, default
# settings, whether it needs librdkafka 2.15.1 on LD_LIBRARY_PATH). The
# default settings keep the fetch wait at 10 ms (module docstring).
CLIENTS = {
    "librdkafka": ("librdkafka 2.15.1 (python3-confluent-kafka)", "/usr/bin/python3", CONSUMER,
                   DEFAULT_CONF, True),
    "kafka-python": ("kafka-python {version} (Debian python3-kafka)", "/usr/bin/python3",
                     KAFKA_PYTHON_CONSUMER, {"fetch_max_wait_ms": 10}, False),
    "kafka-python-3": ("kafka-python {version} (the client matrix's venv, PyPI)", KAFKA_PYTHON_3,
                       KAFKA_PYTHON_CONSUMER, {"fetch_max_wait_ms": 10}, False),
}


def longest_gaps(instants, arrivals, before_ms=100, after_ms=300):
    """For each (start_ns, end_ns) instant: the longest time (ms) between two
    consecutive record arrivals among those from `before_ms` before its start
    to `after_ms` after its end, counting the wait from the last arrival
    before the window's end to the first after it (a consumer that stopped
    getting records shows the whole stall). `arrivals` is sorted."""
    out = []
    for b, a in instants:
        lo = max(0, bisect.bisect_left(arrivals, b - before_ms * 1_000_000) - 1)
        hi = min(len(arrivals), bisect.bisect_right(arrivals, a + after_ms * 1_000_000) + 1)
        seg = arrivals[lo:hi]
        out.append(max(((y - x) / 1e6 for x, y in zip(seg, seg[1:])), default=float("inf")))
    return out


def judge(records, stored):
    """Counts against the partition as stored (values in stored order): lost
    = stored but never delivered, dup = delivered more than once, ooo =
    delivered after a value stored later."""
    seen = {}
    for _, _, v in records:
        seen[v] = seen.get(v, 0) + 1
    lost = sum(1 for v in stored if v not in seen)
    dup = sum(n - 1 for n in seen.values() if n > 1)
    rank = {v: i for i, v in enumerate(stored)}
    ooo, high = 0, -1
    for _, _, v in records:
        r = rank.get(v, -1)
        if r < high:
            ooo += 1
        high = max(high, r)
    return lost, dup, ooo


def longest_delays(instants, records, acks, before_ms=100, after_ms=300):
    """For each (start_ns, end_ns) instant: the longest time (ms) from a
    record's acknowledgement to the producer to its arrival at the consumer,
    among records acknowledged from `before_ms` before its start to
    `after_ms` after its end. The gap between records also holds the
    producer's own stall; this is the consumer's part alone."""
    first = {}
    for t, _, v in records:
        first.setdefault(v, t)
    acked = sorted((a[0], v) for v, a in acks.items() if a[1] and v in first)
    keys = [a for a, _ in acked]
    out = []
    for b, a in instants:
        lo = bisect.bisect_left(keys, b - before_ms * 1_000_000)
        hi = bisect.bisect_right(keys, a + after_ms * 1_000_000)
        out.append(max(((first[v] - t) / 1e6 for t, v in acked[lo:hi]), default=float("nan")))
    return out


def summarize(path, moves, interval_s, stored, acks):
    """The consumer row of one case from its output file; `acks` the
    producer's {value: (ack ns, ok, error)}."""
    with open(path) as fh:
        data = json.load(fh)
    records = data["records"]
    arrivals = sorted(r[0] for r in records)
    half = int(interval_s * 1e9 / 2)
    control = [(b + half, b + half) for b, _ in moves]
    lost, dup, ooo = judge(records, stored)
    return {"gap_ms": longest_gaps(moves, arrivals),
            "gap_control_ms": longest_gaps(control, arrivals),
            "delay_ms": longest_delays(moves, records, acks),
            "delay_control_ms": longest_delays(control, records, acks),
            "consumed": len(records), "lost": lost, "duplicated": dup, "out_of_order": ooo,
            "errors": len(data["errors"]), "version": data.get("version"),
            "error_kinds": sorted({e[1] for e in data["errors"]})}


def client_label(results, client):
    """The --consumer-client's label with the version its runs reported."""
    versions = sorted({r["consumer"].get("version") for r in results
                       if r.get("consumer") and r["consumer"].get("version")})
    return CLIENTS[client][0].format(version=", ".join(versions) or "?")


def table_lines(results, conf, client="librdkafka"):
    """The consumer table under the producer one, for rows that ran a consumer."""
    rows = [r for r in results if r.get("consumer")]
    if not rows:
        return []
    kafka_python = client != "librdkafka"
    client = client_label(results, client)
    lines = [
        "",
        f"Consumer across the same moves (`--consumer`): {client} assigned partition 0 from "
        f"the beginning, settings {json.dumps(conf)} "
        "(the mock cluster answers a Fetch that finds nothing only after its MaxWait, so "
        f"{'kafka-python' if kafka_python else 'librdkafka'}'s default 500 ms would show up as "
        "gaps whether or not anything moved). "
        "*longest gap* = per move, the longest time between two consecutive record arrivals "
        "from 100 ms before the move to 300 ms after it (it includes the producer's own stall); "
        "*longest delay* = the consumer's part alone: the longest time from a record's "
        "acknowledgement to the producer to its arrival at the consumer, among records "
        "acknowledged in the same window; in brackets the same at instants half way "
        "between moves (the same window), where nothing moved. Lost = stored but never "
        "delivered, dup = delivered twice, ooo = delivered after a record stored later "
        "(against the partition read back directly).",
        "",
        "| cluster | producer | path | longest gap ms, median / max of moves (no-move) "
        "| each move | longest delay ack -> consumer ms, median / max (no-move) "
        "| consumed | lost | dup | ooo | consumer errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        c = r["consumer"]
        g, gc = c["gap_ms"], c["gap_control_ms"]
        d, dc = c["delay_ms"], c["delay_control_ms"]
        cluster = 'Produce <= v9 (no hints)' if r['capped'] else 'full (KIP-951 hints)'
        errs = f"{c['errors']}" + (f" ({', '.join(c['error_kinds'])})" if c["errors"] else "")
        lines.append(
            f"| {cluster} | {r['client']} | {r['path']} | {statistics.median(g):.1f} / "
            f"{max(g):.1f} ({statistics.median(gc):.1f} / {max(gc):.1f}) | "
            f"{', '.join(f'{x:.0f}' for x in g)} | {statistics.median(d):.1f} / {max(d):.1f} "
            f"({statistics.median(dc):.1f} / {max(dc):.1f}) | {c['consumed']} | {c['lost']} | "
            f"{c['duplicated']} | {c['out_of_order']} | {errs} |")
    return lines

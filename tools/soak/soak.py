#!/usr/bin/python3
"""Soak test: steady produce and consume through epochgate
while the cluster is disturbed, then an independent audit of every record.

- librdkafka 2.15.1 (epochgate-rdkafka-check): idempotent acks=all producer at
  a fixed rate and a consumer group reading concurrently, through epochgate;
- a partition leader moves every 30 s, a broker bounces (down, 3 s, up) every
  2 min (the first bounce at 60 % of a shorter run);
- connection churn beside the clients (epochgate only): connections that
  close at once, send ApiVersions then close, send half a frame then
  reset, or reset with a Metadata request in flight upstream, round-robin
  at --churn-per-s (tests/lib/epochgate_testlib/client_churn.py);
- epochgate's resident memory and open file descriptors sampled every 5 s;
- afterwards the topic is read straight from the mock cluster (python3
  confluent-kafka, not through epochgate) and matched against the producer's
  per-record acknowledgements: an acknowledged record that is not stored
  exactly once, at the offset it was acknowledged with, is lost or duplicated.

Pass: every planned leader move and broker bounce happened and none failed;
zero lost; zero duplicated except records sent while a broker bounce
could cut their acknowledgement (the mock cluster checks producer sequence
numbers only for transactional producers, so it stores an idempotent
producer's retry twice where a real broker would not: those are counted and
reported, see classify_duplicates), judged by the audit and, for what the
mock's retention evicted before the audit, by the check program's consumer
(consumer_copies); the consumer saw nothing else wrong; RSS and fds at the
end within 10 % of their value after warm-up (fds: or 4 descriptors, since a
reconnect briefly holds both sockets);
once the clients are gone, epochgate's gauges of what clients leave held
(sessions, in-flight requests, upstream connections, pooled buffers) at 0.
`--direct` runs the same without epochgate, as a control. Prints one JSON
line last.

    /usr/bin/python3 tools/soak/soak.py --build-dir build --minutes 10

Uses tests/lib/epochgate_testlib/harness.py (processes, mock cluster, epochgate) and
binds only 127.0.0.1. Owns nothing else; never leaves a process behind.
"""

import argparse
import csv
import json
import os
import statistics
import sys
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # epochgate_testlib
from epochgate_testlib import client_churn  # noqa: E402
from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402

TOPIC = "soak"
PARTITIONS = 12  # keeps 10 min at 500/s under the mock's 5 MiB per partition


def proc_sample(pid):
    """(rss_bytes, open_fds) of a process."""
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return rss, len(os.listdir("/proc/%d/fd" % pid))


class Sampler(threading.Thread):
    """Samples (t_s, rss, fds) every `every_s` into `rows` and appends each
    to the CSV at `path` as it is taken, so a long run's curve is on disk
    while it runs (and survives a run that is cut short)."""

    def __init__(self, pid, every_s, path):
        super().__init__(daemon=True)
        self.pid, self.every_s, self.path = pid, every_s, path
        self.rows = []  # (t_s, rss, fds)
        self.stop_event = threading.Event()
        self.t0 = time.monotonic()
        with open(self.path, "w") as f:
            f.write("t_s,rss_bytes,open_fds\n")

    def run(self):
        with open(self.path, "a") as f:
            while not self.stop_event.is_set():
                try:
                    rss, fds = proc_sample(self.pid)
                except OSError:
                    return
                row = (time.monotonic() - self.t0, rss, fds)
                self.rows.append(row)
                f.write("%.1f,%d,%d\n" % row)
                f.flush()
                self.stop_event.wait(self.every_s)

    def stop(self):
        self.stop_event.set()
        self.join(5)


def chaos_plan(seconds, move_every_s, bounce_every_s, quiet_tail_s=5.0):
    """The disturbances a run of `seconds` must carry: [(due s, "move"|"bounce")]
    in time order. A leader move every `move_every_s`, a broker bounce every
    `bounce_every_s` (the first at 60 % of a shorter run), none in the last
    `quiet_tail_s` (the tail of the run stays undisturbed)."""
    plan = []
    t = move_every_s
    while move_every_s > 0 and t < seconds - quiet_tail_s:
        plan.append((t, "move"))
        t += move_every_s
    t = min(bounce_every_s, 0.6 * seconds)
    while bounce_every_s > 0 and t < seconds - quiet_tail_s:
        plan.append((t, "bounce"))
        t += bounce_every_s
    return sorted(plan)


class Chaos(threading.Thread):
    """Carries out a chaos_plan (leader moves, broker bounces); logs every
    action. An action that fails is recorded in `errors` and is not retried:
    the soak fails on any error and on fewer actions done than planned."""

    def __init__(self, cluster, plan, log):
        super().__init__(daemon=True)
        self.cluster, self.plan = cluster, plan
        self.planned_moves = sum(1 for _, kind in plan if kind == "move")
        self.planned_bounces = sum(1 for _, kind in plan if kind == "bounce")
        self.log = log
        self.moves = self.bounces = 0
        self.bounce_windows = []  # (down wall-clock s, up wall-clock s, broker)
        self.errors = []
        self.stop_event = threading.Event()

    def _note(self, t, what):
        self.log.write("%.1f %s\n" % (t, what))
        self.log.flush()

    def run(self):
        t0 = time.monotonic()
        bounce_broker = 1
        move_partition = 0
        for due, kind in self.plan:
            if self.stop_event.wait(max(0.0, due - (time.monotonic() - t0))):
                return  # stopped early: the actions left are missing, and counted so
            t = time.monotonic() - t0
            try:
                if kind == "move":
                    p = move_partition % PARTITIONS
                    move_partition += 1
                    leader = self.cluster.partition(TOPIC, p)["leader"]
                    target = leader % 3 + 1
                    _, epoch = self.cluster.move_leader(TOPIC, p, target)
                    self.moves += 1
                    self._note(t, "leader %s/%d %d -> %d epoch %d" % (TOPIC, p, leader, target,
                                                                      epoch))
                else:
                    b = bounce_broker
                    bounce_broker = b % 3 + 1
                    down_wall = time.time()
                    self.cluster.cmd("down %d" % b)
                    self._note(t, "down %d" % b)
                    self.stop_event.wait(3)
                    self.cluster.cmd("up %d" % b)
                    self.bounce_windows.append((down_wall, time.time(), b))
                    self._note(time.monotonic() - t0, "up %d" % b)
                    self.bounces += 1
            except Exception as e:  # keep the soak going; the run fails on it
                self.errors.append("%.1f %s: %r" % (t, kind, e))
                self._note(t, "chaos error (%s) %r" % (kind, e))


def audit(bootstrap, run_id, timeline_path, deadline_s=None):
    """Reads every partition straight from the cluster and matches the
    records against the producer's acknowledgements. The mock cluster keeps
    at most 5 MiB or 100,000 batches per partition and drops the oldest
    beyond that; acknowledged records below a partition's log start offset
    cannot be re-read, so they are counted as `evicted` (the check program's
    own consumer read those while they existed) and excluded from `lost`."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    acked = {}
    with open(timeline_path) as f:
        for row in csv.DictReader(f):
            if int(row["error"]) == 0 and int(row["offset"]) >= 0:
                acked[int(row["seq"])] = (int(row["partition"]), int(row["offset"]))
    if deadline_s is None:
        # Reading the mock back runs at about 1,000-2,000 records/s here,
        # less while the machine is busy.
        deadline_s = 120 + len(acked) / 500.0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-audit-%s" % run_id,
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "auto.offset.reset": "earliest"})
    stored = {}
    records = 0
    lows, highs, last = {}, {}, {}
    try:
        for p in range(PARTITIONS):
            lows[p], highs[p] = c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)
        c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        done = {p for p in range(PARTITIONS) if highs[p] <= lows[p]}
        prefix = ("eg:%s:" % run_id).encode()
        deadline = time.monotonic() + deadline_s
        while len(done) < PARTITIONS and time.monotonic() < deadline:
            for m in c.consume(num_messages=1000, timeout=1.0):
                if m.error():
                    if m.error().code() == -191 and m.offset() >= highs[m.partition()]:
                        done.add(m.partition())  # _PARTITION_EOF at the end
                    continue
                records += 1
                last[m.partition()] = m.offset()
                if m.offset() + 1 >= highs[m.partition()]:
                    done.add(m.partition())
                v = m.value() or b""
                if not v.startswith(prefix):
                    continue
                field = v[len(prefix):].split(b":", 1)[0]
                if field.isdigit():  # not a warm-up or end marker
                    stored.setdefault(int(field), []).append((m.partition(), m.offset()))
    finally:
        c.close()
    evicted = sum(1 for p, off in acked.values() if off < lows.get(p, 0))
    # A record past where the audit stopped reading its partition is
    # unverified, not lost (the run still fails: the audit is incomplete).
    reached = {p: (highs[p] - 1 if p in done else last.get(p, -1)) for p in lows}
    unverified = sum(1 for p, off in acked.values() if off > reached.get(p, -1))
    lost = sorted(s for s, (p, off) in acked.items()
                  if lows.get(p, 0) <= off <= reached.get(p, -1)
                  and (p, off) not in stored.get(s, []))
    duplicated = sorted(s for s, w in stored.items() if len(w) > 1)
    return {"acked": len(acked), "stored_distinct": len(stored), "records_read": records,
            "evicted_by_mock_retention": evicted, "unverified": unverified,
            "verified": len(acked) - evicted - unverified,
            "lost": len(lost), "duplicated": len(duplicated), "lost_sample": lost[:10],
            "duplicated_sample": duplicated[:10], "duplicated_seqs": duplicated,
            "complete": len(done) == PARTITIONS,
            "partitions": {p: {"log_start": lows[p], "end": highs[p], "last_read": last.get(p)}
                           for p in lows}}


def classify_duplicates(seqs, timeline_path, bounce_windows, before_s=10.0, after_s=2.0):
    """Splits duplicated records into those sent while a broker bounce could
    have cut their acknowledgement (sent from `before_s` before a `down` to
    `after_s` after the `up`) and the rest. librdkafka's mock cluster checks
    producer sequence numbers only for transactional producers
    (rd_kafka_mock_validate_records returns early without a TransactionalId),
    so an idempotent producer's retry of a batch whose answer was lost in a
    bounce is stored twice by the mock, with or without epochgate; a real
    broker drops it as a duplicate sequence."""
    want = set(seqs)
    sent = {}
    with open(timeline_path) as f:
        for row in csv.DictReader(f):
            if int(row["seq"]) in want:
                sent[int(row["seq"])] = int(row["send_us"]) / 1e6
    explained, unexplained = [], []
    for seq in seqs:
        t = sent.get(seq)
        if t is not None and any(down - before_s <= t <= up + after_s
                                 for down, up, _ in bounce_windows):
            explained.append(seq)
        else:
            unexplained.append(seq)
    return explained, unexplained


def consumer_copies(timeline_path):
    """What the check program's consumer received, per record, from its
    timeline: (seqs received more than once, seqs whose first copy came at a
    partition or offset other than the acknowledged one). The audit alone
    cannot judge the consumer's duplicates: over a long run the mock's
    retention evicts most records before the audit reads them back, and with
    them the second copies a bounce made, while the consumer saw every one.
    A record stored twice is received first at the copy its acknowledgement
    did not name (when the retry's answer is the one that arrived), so such
    a record counts once as misplaced and once as a duplicate."""
    twice, elsewhere = [], []
    with open(timeline_path) as f:
        for row in csv.DictReader(f):
            seq = int(row["seq"])
            if int(row["received"]) > 1:
                twice.append(seq)
            if (int(row["error"]) == 0 and int(row["ack_us"]) > 0
                    and int(row["consumed_offset"]) >= 0
                    and (row["consumed_partition"], row["consumed_offset"])
                    != (row["partition"], row["offset"])):
                elsewhere.append(seq)
    return twice, elsewhere


def churn_jobs(address):
    """The four shapes of connection churn the soak keeps up (client_churn)."""
    metadata = kw.metadata_request(0x5301, [TOPIC], version=1)
    return [
        ("close_at_once", client_churn.close_at_once(), address, None, None),
        ("api_versions_then_close",
         client_churn.request_then_close(kw.api_versions_request(0x5302, 0)), address, None,
         None),
        ("half_frame_then_rst", client_churn.half_frame_then_close(metadata, rst=True), address,
         None, None),
        ("request_then_rst", client_churn.in_flight_upstream_then_close(metadata, rst=True),
         address, None, None),
    ]


def flatness(rows, warmup_s):
    """Baseline (mean of the first 3 samples after warm-up), end (mean of the
    last 3) and the max over the run after warm-up, for rss and fds."""
    after = [r for r in rows if r[0] >= warmup_s]
    if len(after) < 4:
        after = rows[len(rows) // 2:]
    out = {}
    for i, name in ((1, "rss"), (2, "fds")):
        vals = [r[i] for r in after]
        base = statistics.mean(vals[:3])
        end = statistics.mean(vals[-3:])
        out[name] = {"baseline": base, "end": end, "max": max(vals), "min": min(vals),
                     "end_change_pct": 100.0 * (end - base) / base if base else 0.0}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--epochgate", help="epochgate binary (default BUILD/proxy/epochgate)")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=500, help="messages per second")
    ap.add_argument("--move-every-s", type=float, default=30.0)
    ap.add_argument("--bounce-every-s", type=float, default=120.0)
    ap.add_argument("--sample-every-s", type=float, default=5.0)
    ap.add_argument("--churn-per-s", type=float, default=20.0,
                    help="client connections per second that go away mid-request (0: none)")
    ap.add_argument("--direct", action="store_true",
                    help="control run: clients straight at the mock cluster, no epochgate")
    ap.add_argument("--warmup-s", type=float, default=None,
                    help="ignored for flatness (default min(60, 25 %% of the run))")
    o = ap.parse_args()
    seconds = o.minutes * 60.0
    warmup = o.warmup_s if o.warmup_s is not None else min(60.0, 0.25 * seconds)
    options = types.SimpleNamespace(
        build_dir=os.path.abspath(o.build_dir), direct=o.direct, file_stem="soak",
        epochgate=o.epochgate or os.path.join(os.path.abspath(o.build_dir), "proxy", "epochgate"))
    h = harness.Harness(options, "soak_%gmin%s" % (o.minutes, "_direct" if o.direct else ""))
    print("soak: %g min, work dir %s" % (o.minutes, h.workdir), flush=True)
    result = {"minutes": o.minutes, "passed": False, "mode": "direct" if o.direct else "epochgate"}
    sampler = chaos = churn = None
    try:
        cluster = h.start_cluster(3, ["%s:%d:3" % (TOPIC, PARTITIONS)])
        gate = None if o.direct else h.start_gate(cluster.bootstrap, ["--log-level", "info"])
        bootstrap = cluster.bootstrap if o.direct else gate.bootstrap
        timeline = os.path.join(h.workdir, "timeline.csv")
        check = h.rdkafka_check_async([
            "--bootstrap", bootstrap, "--topic", TOPIC, "--duration-s", str(seconds),
            "--rate", str(o.rate), "--partitions-keyed", "--idempotent", "--acks", "all",
            "--consume-group", "soak-group", "--concurrent", "--deadline-s", "120",
            "--produce-timeout-s", "120", "--timeline", timeline,
            "--log-file", os.path.join(h.workdir, "check.rdkafka.log")])
        sampler = Sampler(gate.proc.proc.pid if gate else os.getpid(), o.sample_every_s,
                          os.path.join(h.workdir, "rss.csv"))
        sampler.start()
        chaos_log = open(os.path.join(h.workdir, "chaos.log"), "w")
        chaos = Chaos(cluster, chaos_plan(seconds, o.move_every_s, o.bounce_every_s), chaos_log)
        chaos.start()
        if gate and o.churn_per_s > 0:
            # Two threads, each pausing between connections: a steady rate.
            churn = client_churn.Churn(churn_jobs(gate.bootstrap_address), threads=2,
                                       seconds=seconds, pause_s=2.0 / o.churn_per_s).start()
        summary = check.result(timeout=seconds + 400, expect_pass=False)
        if churn:
            churn.stop()
            churn.join(30)
        # Every client has gone (the check program exited, the churn
        # stopped): nothing they made may still be held.
        held = client_churn.wait_released(gate, timeout=30) if gate else {}
        # The plan ends 5 s before the producer does; a bounce still under
        # way gets its 3 s and its `up`.
        chaos.join(15)
        chaos.stop_event.set()
        chaos.join(10)
        sampler.stop()
        a = audit(cluster.bootstrap, summary["run_id"], timeline)
        explained, unexplained = classify_duplicates(a.pop("duplicated_seqs"), timeline,
                                                     chaos.bounce_windows)
        a["duplicated_in_bounce_window"] = len(explained)
        a["duplicated_unexplained"] = len(unexplained)
        twice, elsewhere = consumer_copies(timeline)
        seen_explained, seen_unexplained = classify_duplicates(twice, timeline,
                                                               chaos.bounce_windows)
        copies = set(seen_explained)
        misplaced_unexplained = [s for s in elsewhere if s not in copies]
        flat = flatness(sampler.rows, warmup)
        metrics = gate.metrics() if gate else ""
        result.update({
            "check": {k: summary.get(k) for k in (
                "passed", "reason", "produced", "acked", "failed", "consumed", "duplicates",
                "missing", "out_of_order", "misplaced", "unexpected", "redelivered", "seconds",
                "latency_ms")},
            "audit": a, "leader_moves": chaos.moves, "broker_bounces": chaos.bounces,
            "planned_leader_moves": chaos.planned_moves,
            "planned_broker_bounces": chaos.planned_bounces,
            "chaos_errors": chaos.errors, "samples": len(sampler.rows), "warmup_s": warmup,
            "rss_bytes": flat["rss"], "open_fds": flat["fds"],
            "epochgate_alive": gate.proc.alive() if gate else None,
            "churn": {"done": churn.done, "failed": churn.failed,
                      "errors": churn.errors[:5]} if churn else None,
            "held_after_clients_left": held,
            "frame_errors": sum(float(l.split()[-1]) for l in metrics.splitlines()
                                if l.startswith("epochgate_frame_errors_total")),
        })
        rss_ok = flat["rss"]["end"] <= 1.10 * flat["rss"]["baseline"]
        fd_ok = flat["fds"]["end"] <= max(1.10 * flat["fds"]["baseline"],
                                          flat["fds"]["baseline"] + 4)
        problems = []
        if a["lost"]:
            problems.append("%d acknowledged records lost" % a["lost"])
        if unexplained:
            problems.append("%d records stored twice outside any broker bounce (seq %s)" % (
                len(unexplained), unexplained[:10]))
        if not a["complete"]:
            problems.append("audit could not read every partition to its end "
                            "(%d acknowledged records unverified)" % a["unverified"])
        # The check program fails on any duplicate. A record its consumer
        # received twice is the mock's missing sequence check when it was
        # sent in a bounce window (reported, not failed), and a record first
        # received at another offset is that record's other copy.
        result["check"]["duplicated_in_bounce_window"] = len(seen_explained)
        if seen_unexplained:
            problems.append("the consumer received %d records twice outside any broker bounce "
                            "(seq %s)" % (len(seen_unexplained), seen_unexplained[:10]))
        if misplaced_unexplained:
            problems.append("the consumer received %d records first at a partition/offset "
                            "other than acknowledged, with no second copy from a bounce "
                            "(seq %s)" % (len(misplaced_unexplained),
                                          misplaced_unexplained[:10]))
        if (summary.get("missing") or summary.get("out_of_order") or summary.get("failed")
                or summary.get("unexpected")
                or summary.get("acked") != summary.get("produced")):
            problems.append("rdkafka-check failed: %s" % summary.get("reason"))
        if gate and not rss_ok:
            problems.append("RSS grew %.1f %% after warm-up" % flat["rss"]["end_change_pct"])
        if gate and not fd_ok:
            problems.append("open fds grew from %.0f to %.0f" % (flat["fds"]["baseline"],
                                                                 flat["fds"]["end"]))
        if gate and any(v != 0 for v in held.values()):
            problems.append("held after every client left: %s" % held)
        if churn and churn.total() == 0:
            problems.append("no churn connection was made: %s" % churn.errors[:3])
        # The disturbances are what the soak is about: all of them must have
        # happened, and none may have failed.
        if chaos.errors:
            problems.append("%d chaos action(s) failed: %s" % (len(chaos.errors),
                                                               "; ".join(chaos.errors[:5])))
        if chaos.moves < chaos.planned_moves:
            problems.append("%d of %d planned leader moves happened" % (chaos.moves,
                                                                       chaos.planned_moves))
        if chaos.bounces < chaos.planned_bounces:
            problems.append("%d of %d planned broker bounces happened" % (chaos.bounces,
                                                                         chaos.planned_bounces))
        if chaos.planned_moves == 0 or chaos.planned_bounces == 0:
            problems.append("the run plans %d leader moves and %d broker bounces; a soak needs "
                            "at least one of each (longer --minutes or shorter intervals)"
                            % (chaos.planned_moves, chaos.planned_bounces))
        result["problems"] = problems
        result["passed"] = not problems
    except BaseException as e:
        result["problems"] = ["soak aborted: %r" % e]
        if isinstance(e, KeyboardInterrupt):
            raise
    finally:
        if churn:
            churn.stop()
        if chaos:
            chaos.stop_event.set()
        if sampler and sampler.is_alive():
            sampler.stop()
        problems = h.close()
        if problems:
            result["passed"] = False
            result.setdefault("problems", []).extend(problems)
    r = result
    if "audit" in r:
        print("soak [%s]: %d produced, %d acked; audit: %d re-read (%d evicted by the mock's "
              "retention), %d lost, %d duplicated (%d of them sent during a broker bounce); "
              "consumer: %s consumed, %s missing, %s duplicates (%s redelivered)" % (
                  r["mode"], r["check"]["produced"], r["audit"]["acked"], r["audit"]["verified"],
                  r["audit"]["evicted_by_mock_retention"], r["audit"]["lost"],
                  r["audit"]["duplicated"], r["audit"]["duplicated_in_bounce_window"],
                  r["check"]["consumed"],
                  r["check"]["missing"], r["check"]["duplicates"], r["check"]["redelivered"]))
    if "audit" in r and r["mode"] == "epochgate":
        print("soak: %d of %d leader moves, %d of %d broker bounces, %d chaos errors; RSS %.1f "
              "-> %.1f MiB (%+.1f %%, max %.1f); fds %.0f -> %.0f (max %d)" % (
                  r["leader_moves"], r["planned_leader_moves"], r["broker_bounces"],
                  r["planned_broker_bounces"], len(r["chaos_errors"]),
                  r["rss_bytes"]["baseline"] / 2**20,
                  r["rss_bytes"]["end"] / 2**20, r["rss_bytes"]["end_change_pct"],
                  r["rss_bytes"]["max"] / 2**20, r["open_fds"]["baseline"], r["open_fds"]["end"],
                  r["open_fds"]["max"]))
    if r.get("churn"):
        print("soak: churn %s (failed %s); held after the clients left: %s" % (
            r["churn"]["done"], r["churn"]["failed"], r["held_after_clients_left"]))
    for p in r.get("problems", []):
        print("soak: PROBLEM %s" % p)
    print(json.dumps(r, sort_keys=True), flush=True)
    return 0 if r["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

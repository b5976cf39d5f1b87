#!/usr/bin/env python3
"""Where the Java producer's first acknowledgement after a real leader move
waits: one row per move of a `bench/real_kafka.py --java-only` run, from its
results.json (move_wall_ms lines the logs up), the brokers' logs, epochgate's
debug log and the Java client's DEBUG log (`--java-log-config`, producer
internals, Metadata and NetworkClient at DEBUG, timestamps in UTC). Not a
test: run by hand after the bench.

    /usr/bin/python3 bench/real_kafka_phases.py WORK_DIR JAVA_CLIENT_LOG

Columns, ms after the move was issued:
  elected   the Admin client's PREFERRED election returned
  leads     the new leader took the partition over (its last "Removed
            fetcher" for it: it stopped following)
  old/3rd   the old leader and the third replica started following the new
            leader ("Added fetcher to broker N")
  refused   the client got its first NOT_LEADER_OR_FOLLOWER (direct only:
            through epochgate with rerouting it gets none)
  write     the first write reached the new leader's way: the client's own
            Produce to it (direct), or epochgate's first reroute to it
  ack       the client got the new leader's first acknowledgement
            (error 0, from that node or carrying its CurrentLeader)
  tl_ack    MoveTimeline's first record written under the new epoch,
            acknowledged (what the bench reports)
"""
import datetime
import json
import os
import re
import statistics
import sys


def ms(text):
    """ms since the epoch of a log time stamp in UTC ('2026-12-06 10:32:26,003'
    from the brokers, '2026-12-06T10:55:37.488' from the Java log)."""
    text = text.replace(",", ".").replace(" ", "T")
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc).timestamp() * 1000


def broker_lines(workdir):
    """(ms, node, message) of every broker log line naming a move topic."""
    out = []
    for node in (1, 2, 3):
        with open(os.path.join(workdir, "kafka", "node%d.log" % node), errors="replace") as f:
            for line in f:
                m = re.match(r"\[(\S+ \S+)\] (.*)", line)
                if m and "mv-java" in m.group(2):
                    out.append((ms(m.group(1)), node, m.group(2)))
    return out


def timed_lines(path, pattern, stamp):
    """(ms, line) of the lines of `path` matching `pattern`; `stamp` takes the
    time stamp text out of a line."""
    if not os.path.exists(path):
        return []
    with open(path, errors="replace") as f:
        return [(ms(stamp(line)), line) for line in f if re.search(pattern, line)]


def first(rows, lo, hi, pred):
    """The first row's time in [lo, hi] for which pred(row) holds, else nan."""
    return next((r[0] for r in rows if lo <= r[0] <= hi and pred(r)), float("nan"))


def phases(move, path, i, brokers, gate, java):
    """One move's row (see the module doc), ms after the move was issued."""
    t0 = move["move_wall_ms"]
    topic = "mv-java-%s-%d-0" % (path, i)
    old, new = (int(x) for x in move["move"].split(":")[1].split("->"))
    third = ({1, 2, 3} - {old, new}).pop()
    hi = t0 + max(move["first_new_ack_ms"], 0) + 2000
    own = [r for r in brokers if topic in r[2]]
    leads = [t for t, n, msg in own if t0 <= t <= hi and n == new and "Removed fetcher" in msg]

    def follows(node):
        return first(own, t0, hi, lambda r: r[1] == node and "Added fetcher to broker %d" % new in r[2])

    mine = [r for r in java if topic in r[1] or "topicId" in r[1]]
    refused = first(mine, t0, hi, lambda r: "Received PRODUCE" in r[1] and "errorCode=6" in r[1])
    ack = first(mine, t0, hi, lambda r: "Received PRODUCE" in r[1] and "errorCode=0" in r[1] and (
        "from node %d " % new in r[1] or "leaderId=%d," % new in r[1]))
    if path == "direct":
        write = first(mine, t0, hi, lambda r: "Sending PRODUCE" in r[1] and "to node %d:" % new in r[1])
    else:
        write = min(first(gate, t0, hi, lambda r: "partition(s) to node %d:" % new in r[1]),
                    first(mine, t0, hi, lambda r: "Sending PRODUCE" in r[1] and "to node %d:" % new in r[1]))
    row = [move["move_ms"], leads[-1] if leads else float("nan"), follows(old), follows(third),
           refused, write, ack]
    return [x - t0 if x == x and k > 0 else x for k, x in enumerate(row)] + [move["first_new_ack_ms"]]


def main():
    workdir, java_log = sys.argv[1], sys.argv[2]
    with open(os.path.join(workdir, "results.json")) as f:
        moves = json.load(f)["moves"]
    brokers = broker_lines(workdir)
    gate = timed_lines(os.path.join(workdir, "epochgate.log"), r"reroute: \d+ partition\(s\) to node",
                       lambda l: l.split("Z ")[0])
    java = timed_lines(java_log, r"producer-1\].*PRODUCE", lambda l: l.split(" ")[0])
    cols = ("elected", "leads", "old", "3rd", "refused", "write", "ack", "tl_ack")
    print("%-10s %3s " % ("path", "#") + " ".join("%8s" % c for c in cols) + " | write-leads ack-write ack-leads")
    per = {}
    for key, rs in sorted(moves.items()):
        client, path = key.split("/")
        if client != "Java":
            continue
        for i, move in enumerate(rs):
            r = phases(move, path, i, brokers, gate, java)
            per.setdefault(path, []).append(r)
            print("%-10s %3d " % (path, i) + " ".join("%8.0f" % x for x in r)
                  + " | %8.0f %8.0f %8.0f" % (r[5] - r[1], r[6] - r[5], r[6] - r[1]))
    for path, rows in per.items():
        def med(f):
            xs = [f(r) for r in rows if f(r) == f(r)]
            return "%.0f / %.0f" % (statistics.median(xs), max(xs)) if xs else "-"
        print("%s (%d moves), median / max: leads %s, write-leads %s, ack-leads %s, ack-write %s, tl_ack %s" % (
            path, len(rows), med(lambda r: r[1]), med(lambda r: r[5] - r[1]), med(lambda r: r[6] - r[1]),
            med(lambda r: r[6] - r[5]), med(lambda r: r[7])))
    return 0


if __name__ == "__main__":
    sys.exit(main())

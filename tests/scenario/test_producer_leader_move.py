"""Producer fencing scenarios: a partition's leader moves under steady
produce through epochgate.

1. librdkafka 2.15.1, idempotent, acks=all (epochgate-rdkafka-check with a
   concurrent consumer group that accounts for every record): requests to the
   old leader are answered NOT_LEADER_OR_FOLLOWER with a KIP-951 hint by
   epochgate itself: once epochgate's view has the move, not one Produce
   reaches the old leader (the mock cluster's request tracking counts what
   each broker received; the old leader leads nothing else), the producer
   takes the hint (its
   debug log shows the leader-discovery update), nothing is lost or
   duplicated, and the time from the move to the first acknowledgement by the
   new leader is reported. A first, unassisted move shows the figure when the
   broker's own answer reaches the client first.
2. The same with acks=1, and with clients that ignore hints (kcat 1.7 on
   Debian's librdkafka, kafka-python 2.0): they recover through a Metadata
   refresh via epochgate and nothing is lost; kcat's Produce requests never
   reach the old leader after epochgate's view has the move.

The moves are sequenced by what the cluster says (records written on the
partition before a move, and by the new leader after it), not by sleeps.
"""

import json
import os
import shutil
import subprocess
import threading
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "moves"
DEBUG = "broker,metadata,msg"


# The stale-Produce checks count requests at the old leader from the moment
# epochgate's view has the move. With one event loop, a Produce epochgate
# decided before that moment was written upstream before the Metadata answer
# that taught the view reached the test, so it is counted before the
# tracking restarts; with several, another loop could still be writing one.
ONE_LOOP = ("--workers", "1")


def _assert_no_stale_produce(cluster, old, new, what):
    """The old leader received no Produce since the tracking was restarted
    (when epochgate's view learned the move), while the new leader did (so
    the tracking sees this traffic at all)."""
    at_old = sl.track_count(cluster, old, kw.API_PRODUCE)
    at_new = sl.track_count(cluster, new, kw.API_PRODUCE)
    assert at_new >= 1, "%s: the mock tracked no Produce at the new leader %d (tracking off?): %s" % (
        what, new, cluster.cmd("track dump"))
    assert at_old == 0, (
        "%s: %d Produce request(s) reached the old leader %d after epochgate's view had the "
        "move (epochgate must answer them itself): %s" % (what, at_old, old,
                                                           cluster.cmd("track dump")))
    return at_new


def _producer_under_two_moves(h, acks, idempotent):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    # One partition per broker, so that after move 2 the old leader of
    # partition 1 leads nothing: any Produce it receives then is a stale one.
    for p, b in ((0, 1), (1, 2), (2, 3)):
        cluster.cmd("leader %s %d %d" % (TOPIC, p, b))
    gate = sl.start_gate(h, cluster, args=ONE_LOOP)
    gc = sl.GateClient(h, gate)
    sl.open_node_connections(gc, [TOPIC])
    cluster.cmd("track start")
    timeline = os.path.join(h.workdir, "timeline.csv")
    log = os.path.join(h.workdir, "producer.rdkafka.log")
    # Long enough for both moves and their recoveries on a busy machine; the
    # moves themselves wait for the cluster, not for the clock.
    args = ["--bootstrap", gate.bootstrap, "--topic", TOPIC, "--partitions-keyed",
            "--acks", acks, "--duration-s", "10", "--rate", "1000", "--concurrent",
            "--consume-group", "moves-%s" % acks, "--timeline", timeline,
            "--debug", DEBUG, "--log-file", log]
    if idempotent:
        args.append("--idempotent")
    p0_start = sl.end_offset(cluster, TOPIC, 0)
    check = h.rdkafka_check_async(args)

    # Move 1, unassisted: partition 0 moves and nobody tells epochgate; the
    # old broker's own NOT_LEADER_OR_FOLLOWER (with its hint, rewritten to
    # epochgate's address) is what the producer sees first. It moves once
    # the producer is writing to it.
    sl.wait_end_offset_above(cluster, TOPIC, 0, p0_start + 100, timeout=30,
                             what="the producer to write 100 records to partition 0")
    a_old = cluster.partition(TOPIC, 0)["leader"]
    a_new = 3
    m0 = sl.scrape(gate)
    p0_at_move = sl.end_offset(cluster, TOPIC, 0)
    a_moved_us, a_epoch = cluster.move_leader(TOPIC, 0, a_new)
    sl.wait_end_offset_above(cluster, TOPIC, 0, p0_at_move, timeout=30,
                             what="the new leader %d of partition 0 to take records" % a_new)

    # Move 2, epochgate first: epochgate's view learns partition 1's new
    # leader (another client's Metadata) just before the old leader steps down.
    # Not while the producer still asks for move 1's leader: its query would
    # take the answer staged for epochgate's view.
    sl.wait_metadata_quiet(log)
    m1 = sl.scrape(gate)
    b_new = 1
    p1_at_move = sl.end_offset(cluster, TOPIC, 1)
    b_moved_us, b_epoch, b_old, b_learned_us = sl.move_view_first(
        cluster, gc, TOPIC, 1, b_new, on_learned=lambda: sl.restart_tracking_now(cluster))
    assert b_old == 2, b_old
    sl.wait_end_offset_above(cluster, TOPIC, 1, p1_at_move, timeout=30,
                             what="the new leader %d of partition 1 to take records" % b_new)

    s = check.result(timeout=90)
    m2 = sl.scrape(gate)
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, s
    assert s["failed"] == 0 and s["acked"] == s["produced"] > 3000, s
    h.assert_only_front_connections(log, cluster)
    # The claim itself, as the brokers saw it.
    produce_at_new = _assert_no_stale_produce(cluster, b_old, b_new, "move 2")

    rows = harness.read_timeline(timeline)
    a_rec = harness.recovery_ms(rows, a_moved_us, 0, a_new)
    b_rec = harness.recovery_ms(rows, b_moved_us, 1, b_new)
    assert a_rec is not None, "no ack from the new leader %d of partition 0" % a_new
    assert b_rec is not None, "no ack from the new leader %d of partition 1" % b_new

    # What epochgate did during move 2: answered the old leader's requests
    # itself, NOT_LEADER_OR_FOLLOWER with a synthesized hint.
    fenced = sl.delta(m2, m1, sl.FENCED, api="produce", reason="not_leader", mode="enforce")
    synthesized = sl.delta(m2, m1, sl.HINTS, source="synthesized")
    assert fenced >= 1, "epochgate fenced nothing after move 2: %s" % sl.fences_text(m2)
    assert synthesized >= 1, "no synthesized hint after move 2: %s" % sl.fences_text(m2)
    # Stale hints are never sent: every hint the producer took names the
    # partition's new leader at the new epoch.
    b_hints = sl.hint_updates(log, TOPIC, 1)
    assert (b_new, b_epoch) in b_hints, (
        "the producer's log shows no leader-discovery update to %d/%d for partition 1: %s"
        % (b_new, b_epoch, b_hints))
    assert all(e >= b_epoch - 1 for _, e in b_hints), b_hints
    b_hint_s = sl.log_time_of_hint(log, TOPIC, 1, b_new, b_epoch)

    a_hints = sl.hint_updates(log, TOPIC, 0)
    a_sources = {k: v for k, v in ((src, sl.delta(m1, m0, sl.HINTS, source=src))
                                   for src in ("synthesized", "rewritten", "backfilled")) if v}
    h.note("acks=%s%s: %d produced, %d acked, %d consumed, 0 lost, 0 duplicated"
           % (acks, " idempotent" if idempotent else "", s["produced"], s["acked"],
              s["consumed"]))
    h.note("move 1 (p0 %d->%d, epoch %d, unassisted): first ack by the new leader %.1f ms "
           "after the move; hints %s; producer took a hint: %s"
           % (a_old, a_new, a_epoch, a_rec, a_sources or "none",
              "yes" if (a_new, a_epoch) in a_hints else "no (metadata refresh)"))
    h.note("move 2 (p1 %d->%d, epoch %d, epochgate's view first): "
           "fenced %d Produce partitions (not_leader), %d synthesized hints; producer saw %d "
           "NOT_LEADER batches and took the hint %s after epochgate learned the move; first "
           "ack by the new leader %.1f ms after the move; at the brokers: 0 Produce to the old "
           "leader, %d to the new one"
           % (b_old, b_new, b_epoch, fenced, synthesized, sl.client_leader_errors(log, TOPIC, 1),
              "%.1f ms" % ((b_hint_s * 1e6 - b_learned_us) / 1000) if b_hint_s else "(time unknown)",
              b_rec, produce_at_new))
    h.note("delivery latency p50 %.1f p99 %.1f max %.1f ms; %s" % (
        s["latency_ms"]["p50"], s["latency_ms"]["p99"], s["latency_ms"]["max"],
        sl.fences_text(m2)))
    return s


def test_idempotent_acks_all_producer_takes_epochgate_hint(h):
    _producer_under_two_moves(h, "all", idempotent=True)


test_idempotent_acks_all_producer_takes_epochgate_hint.timeout = 120


def test_acks1_producer_takes_epochgate_hint(h):
    _producer_under_two_moves(h, "1", idempotent=False)


test_acks1_producer_takes_epochgate_hint.timeout = 120


def _feed_lines(proc, lines, rate, on_progress):
    """Writes `lines` to proc's stdin at `rate` lines/s, calling
    on_progress(i) after each; closes stdin at the end."""
    start = time.monotonic()
    for i, line in enumerate(lines):
        due = start + i / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()
        on_progress(i)
    proc.stdin.close()


def test_kcat_ignores_hints_and_recovers_by_metadata(h):
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        raise harness.Skip("kcat not installed")
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate = sl.start_gate(h, cluster, args=ONE_LOOP)
    gc = sl.GateClient(h, gate)
    sl.open_node_connections(gc, [TOPIC])
    cluster.cmd("track start")
    start = sl.end_offset(cluster, TOPIC, 1)
    run = "kcat-%d" % os.getpid()
    lines = [("%s:%d" % (run, i)).encode() for i in range(1200)]
    proc = subprocess.Popen(
        [kcat, "-P", "-b", gate.bootstrap, "-t", TOPIC, "-p", "1", "-X", "linger.ms=5",
         "-X", "debug=metadata,broker", "-X", "log.connection.close=false"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=open(os.path.join(h.workdir, "kcat.log"), "wb"), start_new_session=True)
    h.on_close(lambda: proc.poll() is None and proc.kill())
    half = threading.Event()
    feeder = threading.Thread(target=_feed_lines, daemon=True,
                              args=(proc, lines, 400, lambda i: i == 500 and half.set()))
    feeder.start()
    assert half.wait(10), "kcat did not take 500 lines"
    m1 = sl.scrape(gate)
    new = sl.other_broker(cluster.partition(TOPIC, 1)["leader"])
    at_move = sl.end_offset(cluster, TOPIC, 1)
    moved_us, epoch, old, _ = sl.move_view_first(
        cluster, gc, TOPIC, 1, new, on_learned=lambda: sl.restart_tracking_now(cluster))
    sl.wait_end_offset_above(cluster, TOPIC, 1, at_move, timeout=20,
                             what="kcat's records to reach the new leader %d" % new)
    feeder.join(timeout=20)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("kcat did not finish within 30 s after its input ended")
    m2 = sl.scrape(gate)
    with open(os.path.join(h.workdir, "kcat.log"), errors="replace") as f:
        kcat_log = f.read()
    assert "Delivery failed" not in kcat_log, kcat_log[-2000:]
    assert proc.returncode == 0, "kcat exited %d" % proc.returncode
    got = sl.read_partition(h, cluster, TOPIC, 1, start=start)
    mine = [v for v in got if v.startswith(run + ":")]
    assert len(mine) == len(set(mine)), "duplicates: %d" % (len(mine) - len(set(mine)))
    missing = set(l.decode() for l in lines) - set(mine)
    assert not missing, "%d lines lost, e.g. %s" % (len(missing), sorted(missing)[:3])
    assert mine == [l.decode() for l in lines], "order changed on partition 1"
    at_new = _assert_no_stale_produce(cluster, old, new, "kcat")
    fenced = sl.delta(m2, m1, sl.FENCED, api="produce", reason="not_leader", mode="enforce")
    assert fenced >= 1, "epochgate fenced nothing: %s" % sl.fences_text(m2)
    # kcat's Produce version has no hint fields: epochgate sends none, and
    # the client finds the new leader with a Metadata request through epochgate.
    assert sl.delta(m2, m1, sl.HINTS, source="synthesized") == 0, sl.fences_text(m2)
    meta = sl.delta(m2, m1, "epochgate_requests_total", api="metadata")
    assert meta >= 2, "no Metadata refresh through epochgate after the move (%d)" % meta
    h.note("kcat: %d lines, 0 lost, 0 duplicated, order kept; p1 %d->%d epoch %d; fenced %d, "
           "no hints (Produce version without KIP-951), %d Metadata requests via epochgate "
           "after the move; at the brokers: 0 Produce to the old leader, %d to the new one"
           % (len(lines), old, new, epoch, fenced, meta - 1, at_new))


test_kcat_ignores_hints_and_recovers_by_metadata.timeout = 90


def test_kafka_python_ignores_hints_and_recovers_by_metadata(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate = sl.start_gate(h, cluster, args=ONE_LOOP)
    gc = sl.GateClient(h, gate)
    sl.open_node_connections(gc, [TOPIC])
    start = sl.end_offset(cluster, TOPIC, 1)
    peer = harness.Process("kafka-python", [
        harness.TEST_PYTHON, os.path.join(sl.HERE, "steady_python_producer.py"),
        "--bootstrap", gate.bootstrap, "--topic", TOPIC, "--partition", "1",
        "--messages", "1500", "--rate", "500", "--acks", "all"], h.workdir)
    h.on_close(peer.stop)
    line = peer.read_line(timeout=30)
    if line.startswith("SKIP"):
        raise harness.Skip(line)
    assert line == "STARTED", line
    sl.wait_end_offset_above(cluster, TOPIC, 1, start + 500, timeout=30,
                             what="kafka-python to write 500 records")
    m1 = sl.scrape(gate)
    new = sl.other_broker(cluster.partition(TOPIC, 1)["leader"])
    at_move = sl.end_offset(cluster, TOPIC, 1)
    moved_us, epoch, old, _ = sl.move_view_first(cluster, gc, TOPIC, 1, new)
    sl.wait_end_offset_above(cluster, TOPIC, 1, at_move, timeout=20,
                             what="kafka-python's records to reach the new leader %d" % new)
    result = None
    deadline = time.monotonic() + 60
    while result is None and time.monotonic() < deadline:
        line = peer.read_line(timeout=max(0.1, deadline - time.monotonic()))
        if line.startswith("{"):
            result = json.loads(line)
    assert result is not None, "kafka-python peer printed no result"
    m2 = sl.scrape(gate)
    assert result["errors"] == 0 and result["acked"] == 1500, {
        k: v for k, v in result.items() if k != "acks"}
    got = sl.read_partition(h, cluster, TOPIC, 1, start=start)
    mine = [v for v in got if v.startswith(result["run"] + ":")]
    assert len(mine) == len(set(mine)), "duplicates: %d" % (len(mine) - len(set(mine)))
    assert len(mine) == 1500, "%d of 1500 on the partition" % len(mine)
    fenced = sl.delta(m2, m1, sl.FENCED, api="produce", reason="not_leader", mode="enforce")
    assert fenced >= 1, "epochgate fenced nothing: %s" % sl.fences_text(m2)
    assert sl.delta(m2, m1, sl.HINTS, source="synthesized") == 0, sl.fences_text(m2)
    meta = sl.delta(m2, m1, "epochgate_requests_total", api="metadata")
    assert meta >= 2, "no Metadata refresh through epochgate after the move (%d)" % meta
    acks_after = sorted(a for a in result["acks"] if a >= moved_us)
    recovery = (acks_after[0] - moved_us) / 1000.0 if acks_after else None
    h.note("kafka-python %s (api_version %s): 1500 acked, 0 lost, 0 duplicated; p1 %d->%d epoch %d; "
           "fenced %d, no hints, %d Metadata requests via epochgate; first ack after the move "
           "+%.1f ms, last gap in acks %.1f ms" % (
               result["version"], result.get("api_version", "?"), old, new, epoch, fenced,
               meta - 1, recovery if recovery is not None else -1, result["max_gap_ms"]))


test_kafka_python_ignores_hints_and_recovers_by_metadata.timeout = 90


if __name__ == "__main__":
    harness.main(globals())

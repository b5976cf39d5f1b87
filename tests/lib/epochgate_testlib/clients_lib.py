"""Shared pieces of the client-ecosystem tests (KafkaJS, sarama, kafka-go):
each client runs once straight at the embedded cluster and once through
epochgate in the same test, and both runs are held to exact counts and to
what the cluster itself says.

Owns: finding the built client peers (clients/build.sh), running one peer
run with its MARK handshake, reading the cluster's own view of a topic
(high watermarks from each partition's leader, committed offsets from the
group coordinator, per-broker request counts), and the direct-vs-epochgate
comparison. It must never decide a verdict from epochgate's own counters or
logs, never wait without a deadline, and never skip a test silently: a
missing tool is a failure that says what to install.
"""

import json
import os
import subprocess
import threading
import time
import uuid

from . import harness
from . import kafka_wire as kw
from . import test_area

CLIENTS = os.path.join(test_area("integration"), "clients")

API_PRODUCE = 0
API_FETCH = 1

_peers = None


def peers():
    """{'sarama', 'kafkago', 'kafkajs', 'kafkajs_modules', 'node', ...}:
    paths from clients/build.sh, which builds or finds them in the cache.
    Raises AssertionError with build.sh's reason when a tool is missing."""
    global _peers
    if _peers is None:
        try:
            r = subprocess.run(["bash", os.path.join(CLIENTS, "build.sh")], capture_output=True,
                               text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise AssertionError("clients/build.sh did not finish within 600 s")
        if r.returncode != 0:
            raise AssertionError("client peers could not be built (tools/setup.sh installs "
                                 "what they need): %s" % r.stderr.strip()[-800:])
        _peers = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    return _peers


def peer_argv(client):
    p = peers()
    if client == "kafkajs":
        return [p["node"], p["kafkajs"], "--modules", p["kafkajs_modules"]]
    return [p[client]]


def _socket_inodes(pid):
    inodes = set()
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _tcp_remote_ports(inodes):
    """Remote ports of the established TCP sockets among `inodes`."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "01" and fields[9] in inodes:  # ESTABLISHED
                        ports.add(int(fields[2].rsplit(":", 1)[1], 16))
        except OSError:
            continue
    return ports


class ConnectionWatch:
    """Samples (every 50 ms, on a thread) the remote ports of a process's
    established TCP connections, the way `ss -tnp` would show them: a client
    run through epochgate must never reach a cluster port itself."""

    def __init__(self, pid):
        self.pid = pid
        self.ports = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.ports |= _tcp_remote_ports(_socket_inodes(self.pid))
            self.samples += 1
            self._stop.wait(0.05)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        return self.ports


class PeerRun:
    """One run of a client peer: started at once, its MARK lines answered by
    `on_mark(name)` (then the peer is told to go on), its JSON summary kept."""

    def __init__(self, h, client, bootstrap, topic, args, on_mark=None, name=None, run_id=None):
        self.client = client
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.group = "g-" + self.run_id
        argv = peer_argv(client) + ["--bootstrap", bootstrap, "--topic", topic,
                                    "--run", self.run_id, "--group", self.group] + list(args)
        if on_mark is not None:
            argv.append("--pause")
        self.name = name or client
        h._commands.write("$ %s\n" % " ".join(argv))
        h._commands.flush()
        self.proc = harness.Process(self.name, argv, h.workdir, stdin=True)
        self.watch = ConnectionWatch(self.proc.proc.pid)
        h._processes.append(self)
        self.on_mark = on_mark
        self.marks = []

    def result(self, timeout):
        """Waits (at most `timeout` s) for the summary; returns it as a dict
        with 'wall_seconds' added."""
        started = time.monotonic()
        deadline = started + timeout
        summary = None
        while summary is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                raise AssertionError("%s gave no summary within %.0fs; stderr: %s" % (
                    self.name, timeout, self.proc.tail(15)))
            line = self.proc.out.get(left)
            if line is None:
                raise AssertionError("%s exited (rc=%s) without a summary; stderr: %s" % (
                    self.name, self.proc.proc.poll(), self.proc.tail(15)))
            if line.startswith("MARK ") or line.startswith("{"):
                # Connections are all still open here: sample once more.
                self.watch.ports |= _tcp_remote_ports(_socket_inodes(self.proc.proc.pid))
            if line.startswith("MARK "):
                mark = line.split(" ", 1)[1]
                self.marks.append(mark)
                if self.on_mark is not None:
                    self.on_mark(mark)
                    self.proc.proc.stdin.write(b"continue\n")
                    self.proc.proc.stdin.flush()
            elif line.startswith("{"):
                summary = json.loads(line)
        try:
            self.proc.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("%s printed its summary but did not exit" % self.name)
        summary["remote_ports"] = sorted(self.watch.stop())
        summary["wall_seconds"] = round(time.monotonic() - started, 2)
        summary["returncode"] = self.proc.proc.returncode
        summary["marks"] = self.marks
        summary["group"] = self.group
        return summary

    def stop(self):
        self.watch.stop()
        return self.proc.stop()


def check_front(label, s, cluster, way):
    """Through epochgate the client reached no cluster port (an address that
    leaked past the rewrite would show here); directly it did (control)."""
    reached = set(s["remote_ports"]) & set(cluster.ports)
    if way == "direct":
        assert reached, "%s: control: the direct client never reached a cluster port (saw %s)" % (
            label, s["remote_ports"])
    else:
        assert s["remote_ports"] and not reached, (
            "%s: the client connected to cluster ports %s past epochgate (saw %s)" % (
                label, sorted(reached), s["remote_ports"]))


# ----------------------------------------------------------- cluster's view

def _ask(address, frame, timeout=5.0):
    conn = kw.Connection(address[0], address[1], timeout=timeout)
    try:
        conn.send(frame)
        return conn.recv_frame()
    finally:
        conn.close()


def high_watermarks(cluster, topic, partitions):
    """{partition: high watermark} from each partition's leader (ListOffsets
    latest), straight from the cluster."""
    out = {}
    for p in range(partitions):
        leader = cluster.partition(topic, p)["leader"]
        _, offsets = kw.parse_list_offsets_response(
            _ask(cluster.broker_address(leader), kw.list_offsets_request(0x4C4F, topic, [p])))
        offset, err = offsets[(topic, p)]
        assert err == 0, "ListOffsets %s[%d] on broker %d: error %d" % (topic, p, leader, err)
        out[p] = offset
    return out


def committed_offsets(cluster, group, topic, partitions):
    """{partition: committed offset (-1: none)} of `group`, from whichever
    broker coordinates it (the others answer NOT_COORDINATOR)."""
    last = None
    for address in cluster.addresses:
        _, offsets = kw.parse_offset_fetch_response(
            _ask(address, kw.offset_fetch_request(0x4F46, group, {topic: list(range(partitions))})))
        errors = {err for (_, err) in offsets.values()}
        if errors == {0}:
            return {p: offsets[(topic, p)][0] for p in range(partitions)}
        last = (address, offsets)
    raise AssertionError("no broker answered OffsetFetch for %s without error: %s" % (group, last))


def tracked(cluster):
    """{(broker, api_key): requests} the cluster counted since `track clear`."""
    out = {}
    for item in cluster.cmd("track dump").split()[1:]:
        where, count = item.split("=")
        broker, api = where.split(":")
        out[(int(broker), int(api))] = int(count)
    return out


def move_all_leaders(cluster, topic, partitions, broker_id):
    """Moves every partition's leadership to `broker_id`; returns
    {partition: (old leader, new epoch)}."""
    moved = {}
    for p in range(partitions):
        old = cluster.partition(topic, p)["leader"]
        if old == broker_id:
            continue
        _, epoch = cluster.move_leader(topic, p, broker_id)
        moved[p] = (old, epoch)
    return moved


# ------------------------------------------------------------------ checks

def check_exact(label, s, cluster, topic, partitions, messages, ordered=False,
                redelivery_on_rejoin=False):
    """The user's checks of one run: every record produced was acknowledged
    and consumed exactly once, the log holds exactly that many (nothing lost
    or duplicated at the broker) and the group committed up to the end of
    every partition. With `redelivery_on_rejoin`, a client that rejoined its
    group may deliver again what it had not committed (at-least-once), and
    only then; nothing may be lost and the log must still be exact."""
    problems = []
    expect = [("produced", messages), ("acked", messages), ("unique", messages), ("failed", 0),
              ("missing", 0), ("misplaced", 0)]
    if not (redelivery_on_rejoin and s.get("group_joins", 0) > 1):
        expect += [("consumed", messages), ("duplicates", 0)]
    elif s.get("consumed") != messages + s.get("duplicates", 0):
        problems.append("consumed=%s is not unique %d + duplicates %s" % (
            s.get("consumed"), messages, s.get("duplicates")))
    for field, want in expect:
        if s.get(field) != want:
            problems.append("%s=%s (want %s)" % (field, s.get(field), want))
    if ordered and s.get("out_of_order") != 0:
        problems.append("out_of_order=%s (an idempotent producer keeps order)" % s.get("out_of_order"))
    hw = high_watermarks(cluster, topic, partitions)
    if sum(hw.values()) != messages:
        problems.append("the log holds %d records, %d produced and %s acknowledged (high "
                        "watermarks %s)" % (sum(hw.values()), messages, s.get("acked"), hw))
    committed = committed_offsets(cluster, s["group"], topic, partitions)
    if committed != hw:
        problems.append("committed offsets %s != high watermarks %s" % (committed, hw))
    if problems:
        raise AssertionError("%s: %s\nsummary: %s" % (label, "; ".join(problems), json.dumps(s)))
    return {"hw": hw, "committed": committed}


def fmt(s):
    return "produced %s acked %s consumed %s (unique %s, dup %s) in %.2fs" % (
        s.get("produced"), s.get("acked"), s.get("consumed"), s.get("unique"),
        s.get("duplicates"), s.get("wall_seconds", 0))


class BothWays:
    """One cluster, one epochgate in front of it, and helpers to run the same
    client operation straight at the cluster and through epochgate."""

    def __init__(self, h, brokers=4, gate_args=()):
        self.h = h
        self.cluster = h.start_cluster(brokers)
        self.gate = None if h.direct else h.start_gate(self.cluster.bootstrap, gate_args)
        self._topics = 0

    def ways(self):
        """[(name, bootstrap)]: direct always, epochgate unless --direct."""
        out = [("direct", self.cluster.bootstrap)]
        if self.gate is not None:
            out.append(("epochgate", self.gate.bootstrap))
        return out

    def topic(self, partitions=3, replicas=3):
        self._topics += 1
        name = "%s-%d" % (self.h.test_name.replace("_", "-"), self._topics)
        self.cluster.cmd("create %s %d %d" % (name, partitions, replicas))
        harness.wait_until(lambda: len(self.cluster.metadata([name])["topics"].get(name, {})
                                       .get("partitions", {})) == partitions,
                           10, what="topic %s" % name)
        return name

    def roundtrip(self, client, args, messages=200, partitions=3, ordered=False,
                  leader_move=False, redelivery_on_rejoin=False, timeout=60.0,
                  known_direct_crash=None):
        """Runs `client` both ways on fresh topics; returns {way: summary}.
        With `leader_move`, every partition is led by the first broker when
        the run starts, all move to the last broker at the peer's MARK, and
        the cluster must have seen Produce and Fetch reach the last broker
        only after the move. `known_direct_crash`: text of a client's own
        crash (a bug of that client version, named by the caller) that, when
        the run straight at the cluster dies with it, leaves that run out of
        the comparison; the run through epochgate must pass in full."""
        results = {}
        for way, bootstrap in self.ways():
            topic = self.topic(partitions)
            before_move = {}
            target = None
            if leader_move:
                # One broker leads every partition, then hands them all to a
                # broker that led none (a broker being drained): the new
                # leader's request counts then show the client following.
                brokers = list(range(1, len(self.cluster.addresses) + 1))
                source, target = brokers[0], brokers[-1]
                move_all_leaders(self.cluster, topic, partitions, source)

            def on_mark(mark, topic=topic, target=target):
                if mark != "half" or not leader_move:
                    return
                before_move.update(tracked(self.cluster))
                self.cluster.cmd("track clear")
                before_move["moved"] = move_all_leaders(self.cluster, topic, partitions, target)

            if leader_move:
                self.cluster.cmd("track start")
                self.cluster.cmd("track clear")
            run = PeerRun(self.h, client, bootstrap, topic,
                          ["--messages", str(messages), "--partitions", str(partitions),
                           "--timeout", str(timeout - 15)] + list(args),
                          on_mark=on_mark if leader_move else None, name="%s-%s" % (client, way))
            try:
                s = run.result(timeout)
            except AssertionError as e:
                if way != "direct" or not known_direct_crash or known_direct_crash not in str(e):
                    raise
                self.h.note("%s direct: the client crashed on its own (%s); the run through "
                            "epochgate is checked alone" % (client, known_direct_crash))
                if leader_move:
                    self.cluster.cmd("track stop")
                continue
            s["way"] = way
            check_front("%s %s" % (client, way), s, self.cluster, way)
            s["view"] = check_exact("%s %s" % (client, way), s, self.cluster, topic, partitions,
                                    messages, ordered=ordered,
                                    redelivery_on_rejoin=redelivery_on_rejoin)
            if leader_move:
                after = tracked(self.cluster)
                self.cluster.cmd("track stop")
                s["moved"] = before_move.get("moved")
                b = target
                assert s["moved"], "%s %s: the peer never reached its MARK" % (client, way)
                early = {api: before_move.get((b, api), 0) for api in (API_PRODUCE, API_FETCH)}
                late = {api: after.get((b, api), 0) for api in (API_PRODUCE, API_FETCH)}
                assert early == {API_PRODUCE: 0, API_FETCH: 0}, (
                    "%s %s: broker %d got Produce/Fetch before it led anything: %s"
                    % (client, way, b, early))
                assert late[API_PRODUCE] > 0 and late[API_FETCH] > 0, (
                    "%s %s: after the move the new leader %d got Produce %d, Fetch %d: the "
                    "client did not follow the move" % (client, way, b, late[API_PRODUCE],
                                                        late[API_FETCH]))
                s["new_leader_requests"] = late
            self.h.note("%s %s: %s%s" % (client, way, fmt(s), (
                "; %d leaders moved to broker %d, which then got Produce %d, Fetch %d"
                % (partitions, target, late[API_PRODUCE], late[API_FETCH])) if leader_move else ""))
            results[way] = s
        self._same_log_errors(client, results, compare=not leader_move)
        if redelivery_on_rejoin:
            rejoined = {way: s.get("group_joins", 0) > 1 for way, s in results.items()}
            assert all(rejoined.values()), (
                "%s: expected a group rejoin after the leader move both ways, got %s"
                % (client, {w: s.get("group_joins") for w, s in results.items()}))
            self.h.note("%s rejoins its group after the leader move both ways and delivers "
                        "again what it had not committed: %s" % (client, ", ".join(
                            "%s %d joins %d redelivered" % (w, s["group_joins"], s["duplicates"])
                            for w, s in results.items())))
        return results

    def _same_log_errors(self, client, results, compare):
        """A client that logs errors about the cluster's answers (KafkaJS does)
        must log the same ones through epochgate as directly. Around a leader
        move which retriable errors get logged depends on timing: they are
        shown, not compared."""
        logged = {way: sorted(s.get("log_errors") or []) for way, s in results.items()}
        if not compare:
            for way, errors in logged.items():
                if errors:
                    self.h.note("%s %s logged: %s" % (client, way, errors))
            return
        if "epochgate" in logged:
            assert logged["direct"] == logged["epochgate"], (
                "%s logs different errors through epochgate than directly:\n direct    %s\n"
                " epochgate %s" % (client, logged["direct"], logged["epochgate"]))
        if logged["direct"]:
            self.h.note("%s logs the same errors both ways (the embedded cluster's answers, "
                        "not epochgate): %s" % (client, logged["direct"]))

    def same_failure(self, client, args, expect, messages=50, partitions=3, timeout=40.0):
        """Runs `client` both ways where the embedded cluster lacks what the
        client needs: both runs must fail the same way, with `expect` (a
        substring) among their errors. Returns {way: summary}."""
        results = {}
        for way, bootstrap in self.ways():
            topic = self.topic(partitions)
            run = PeerRun(self.h, client, bootstrap, topic,
                          ["--messages", str(messages), "--partitions", str(partitions),
                           "--timeout", str(timeout - 15)] + list(args),
                          name="%s-%s-failing" % (client, way))
            s = run.result(timeout)
            errors = s.get("errors") or []
            assert not s["passed"] and any(expect in e for e in errors), (
                "%s %s: expected the run to fail with %r, got %s" % (client, way, expect,
                                                                     json.dumps(s)))
            results[way] = s
        def first(s):
            return sorted({e for e in s["errors"] if expect in e})

        if "epochgate" in results:
            d, g = results["direct"], results["epochgate"]
            assert first(d) == first(g) and (d["acked"], d["consumed"]) == (g["acked"], g["consumed"]), (
                "%s fails differently through epochgate than directly:\n direct   %s\n epochgate %s"
                % (client, json.dumps(d), json.dumps(g)))
        self.h.note("%s: the embedded cluster lacks what it needs; fails the same way both "
                    "ways: %s" % (client, first(results["direct"])))
        return results


def seed_one_per_partition(cluster, topic, partitions, run_id):
    """Writes one record per partition ("run:seq:" values, seq = partition)
    straight to each leader with raw Produce v3 (acks -1), so a reader can be
    timed without the writer's own connections in the way."""
    by_leader = {}
    for p in range(partitions):
        by_leader.setdefault(cluster.partition(topic, p)["leader"], []).append(p)
    for leader, parts in by_leader.items():
        conn = kw.Connection(*cluster.broker_address(leader), timeout=10)
        try:
            for p in parts:
                batch = kw.record_batch([("%s:%d:" % (run_id, p)).encode()])
                conn.send(kw.produce_request(p + 1, topic, p, batch, acks=-1))
                _, res = kw.parse_produce_response(conn.recv_frame())
                assert res[(topic, p)][0] == 0, "seed produce %s[%d]: %s" % (topic, p, res)
        finally:
            conn.close()

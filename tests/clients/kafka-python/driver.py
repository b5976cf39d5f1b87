"""kafka-python 3.x (pure Python) driven through the ops of tests/clients'
driver protocol. Run with the interpreter of the venv that
tools/clients/fetch-python.sh builds (Debian's kafka-python 2.0.2 is a
separate peer of the suite; this is the newest 3.x from PyPI)."""

import logging
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pycommon"))
import driver_cli as cli  # noqa: E402
import kafka  # noqa: E402
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402

# The library's own log on stderr (the harness keeps it per op): its group
# coordinator and fetcher at debug level, to tell a slow group join from a
# fetch that got nothing.
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
for _name in ("kafka.coordinator", "kafka.consumer.fetcher", "kafka.consumer.subscription_state"):
    logging.getLogger(_name).setLevel(logging.DEBUG)

CLIENT = "kafka-python"
LARGE = 4 * 1024 * 1024
UNSUPPORTED = {
    "share-consume": "kafka-python %s has no share consumer (KIP-932)" % kafka.__version__,
}


def ms_left(a, reserve=1.0):
    return max(1000, int(cli.remaining(a, reserve) * 1000))


def poll_ms(a):
    """poll()'s timeout: the rest of the bound (poll returns as soon as
    records arrive). kafka-python 3.0.12 loses a group join whose SyncGroup
    answer comes after poll() gave up waiting for it ("coordinator.poll:
    timeout in ensure_active_group; returning early"): the member then never
    takes up its partitions nor heartbeats, and reads nothing."""
    return ms_left(a, 1.0)


def common(a):
    return {"bootstrap_servers": a.bootstrap.split(","), "request_timeout_ms": min(15000, ms_left(a)),
            "client_id": "kafka-python-driver"}


def producer(a, **extra):
    conf = common(a)
    conf.update({"acks": "all" if a.acks == "all" else int(a.acks), "linger_ms": 5,
                 "compression_type": None if a.compression == "none" else a.compression,
                 "enable_idempotence": False, "max_block_ms": ms_left(a, 2),
                 "delivery_timeout_ms": ms_left(a, 2)})
    conf.update(extra)
    return KafkaProducer(**conf)


def consumer(a, group=None, **extra):
    conf = common(a)
    conf.update({"group_id": group, "enable_auto_commit": False, "auto_offset_reset": "earliest"})
    conf.update(extra)
    return KafkaConsumer(**conf)


def partition_count(a, client):
    parts = client.partitions_for(a.topic) if isinstance(client, KafkaProducer) \
        else client.partitions_for_topic(a.topic)
    if not parts:
        raise cli.Failed("topic %s not in metadata" % a.topic)
    return len(parts)


def produce_all(a, p, n, prefix="", size=None, partition_of=None, on_ack=None):
    """Sends n records and waits for each; returns (acked, first error, metadata list)."""
    size = a.record_size if size is None else size
    pacer = cli.Pacer(a.rate)
    futures = []
    for i in range(n):
        if cli.expired(a):
            break
        pacer.wait()
        kw = {} if partition_of is None else {"partition": partition_of(i)}
        f = p.send(a.topic, key=cli.key(i).encode(), value=cli.value(i, size, prefix).encode(), **kw)
        if on_ack:
            f.add_callback(lambda md, i=i: on_ack(md, i))
        futures.append(f)
    p.flush(timeout=cli.remaining(a, 1))
    acked, error, metas = 0, "", []
    for f in futures:
        try:
            metas.append(f.get(timeout=max(0.01, cli.remaining(a, 0.5))))
            acked += 1
        except Exception as e:
            error = error or "%s: %s" % (type(e).__name__, e)
    return acked, error, metas


def op_metadata(a):
    ad = KafkaAdminClient(**common(a))
    cluster = ad.describe_cluster()
    topics = ad.describe_topics([a.topic])
    ad.close()
    t = topics[0] if topics else None
    if not t or t.get("error_code"):
        raise cli.Failed("topic %s: %s" % (a.topic, t))
    return {"brokers": sorted([b["host"], b["port"]] for b in cluster["brokers"]),
            "partitions": len(t["partitions"]), "records": 0}


def op_produce(a, **extra):
    p = producer(a, **extra)
    acked, err, _ = produce_all(a, p, a.records)
    p.close(timeout=cli.remaining(a))
    if err or acked != a.records:
        raise cli.Failed("%d of %d acknowledged: %s" % (acked, a.records, err))
    return {"records": acked}


def op_produce_idempotent(a):
    a.acks = "all"
    return op_produce(a, enable_idempotence=True)


def read(a, c, want):
    got = []
    while len(got) < want and not cli.expired(a):
        for recs in c.poll(timeout_ms=poll_ms(a), max_records=want - len(got)).values():
            got.extend(recs)
    return got


def assign_all(a, c, count):
    tps = [TopicPartition(a.topic, p) for p in range(count)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    return tps


def op_transactions(a):
    p = producer(a, transactional_id=a.transactional_id, enable_idempotence=True, acks="all")
    p.init_transactions()
    p.begin_transaction()
    acked, err, _ = produce_all(a, p, a.records, prefix="c")
    if err or acked != a.records:
        raise cli.Failed("committed transaction: %d of %d acknowledged: %s" % (acked, a.records, err))
    p.commit_transaction()
    p.begin_transaction()
    produce_all(a, p, a.records, prefix="a")
    p.abort_transaction()
    p.close(timeout=cli.remaining(a))
    c = consumer(a, isolation_level="read_committed")
    tps = assign_all(a, c, partition_count(a, c))
    ends = c.end_offsets(tps, timeout_ms=ms_left(a))  # the last stable offsets here
    values = []
    while not cli.expired(a) and any(c.position(tp) < ends[tp] for tp in tps):
        for recs in c.poll(timeout_ms=500).values():
            values.extend(r.value.decode() for r in recs)
    c.close(autocommit=False)
    committed = sorted(v for v in values if v.startswith("c"))
    aborted = [v for v in values if v.startswith("a")]
    want = sorted(cli.value(i, a.record_size, "c") for i in range(a.records))
    if aborted or committed != want:
        raise cli.Failed("read_committed saw %d committed (want %d) and %d aborted records"
                         % (len(committed), len(want), len(aborted)))
    return {"records": len(committed)}


def check_order(recs):
    last = {}
    for r in recs:
        if r.offset <= last.get(r.partition, -1):
            raise cli.Failed("partition %d: offset %d after %d" % (r.partition, r.offset, last[r.partition]))
        last[r.partition] = r.offset


def op_consume_assign(a):
    c = consumer(a)
    assign_all(a, c, a.partitions or partition_count(a, c))
    recs = read(a, c, a.records)
    c.close(autocommit=False)
    check_order(recs)
    if len(recs) < a.records:
        raise cli.Failed("read %d of %d records" % (len(recs), a.records))
    return {"records": len(recs)}


def group_consumer(a):
    if a.group_protocol != "classic":
        raise cli.Unsupported("kafka-python %s has no KIP-848 consumer group protocol" % kafka.__version__)
    return consumer(a, group=a.group, session_timeout_ms=10000, heartbeat_interval_ms=1000)


def op_consume_group(a):
    c = group_consumer(a)
    c.subscribe([a.topic])
    recs = read(a, c, a.records)
    if recs:
        c.commit(timeout_ms=ms_left(a))
    c.close(autocommit=False, timeout_ms=ms_left(a, 0))
    check_order(recs)
    if len(recs) < a.records:
        raise cli.Failed("read %d of %d records" % (len(recs), a.records))
    return {"records": len(recs)}


def op_offsets(a):
    c = consumer(a, group=a.group)
    tp = TopicPartition(a.topic, 0)
    c.commit({tp: OffsetAndMetadata(5, "", -1)}, timeout_ms=ms_left(a))
    got = c.committed(tp, timeout_ms=ms_left(a))
    c.close(autocommit=False)
    if got != 5:
        raise cli.Failed("committed offset 5, fetched %s" % got)
    return {"records": 0}


def op_large_record(a):
    size = max(a.record_size, 1024 * 1024)
    p = producer(a, max_request_size=LARGE)
    acked, err, metas = produce_all(a, p, 1, size=size)
    p.close(timeout=cli.remaining(a))
    if err or acked != 1:
        raise cli.Failed("produce of a %d-byte record: %s" % (size, err or "not acknowledged"))
    c = consumer(a, fetch_max_bytes=LARGE, max_partition_fetch_bytes=LARGE)
    tp = TopicPartition(a.topic, metas[0].partition)
    c.assign([tp])
    c.seek(tp, metas[0].offset)
    recs = read(a, c, 1)
    c.close(autocommit=False)
    if not recs or recs[0].value != cli.value(0, size).encode():
        raise cli.Failed("read back %s" % ("nothing" if not recs else "%d different bytes" % len(recs[0].value)))
    return {"records": 1}


def op_many_partitions(a):
    p = producer(a)
    count = partition_count(a, p)
    acked, err, _ = produce_all(a, p, count, partition_of=lambda i: i)
    p.close(timeout=cli.remaining(a))
    if err or acked != count:
        raise cli.Failed("%d of %d acknowledged: %s" % (acked, count, err))
    c = consumer(a)
    assign_all(a, c, count)
    recs = read(a, c, count)
    c.close(autocommit=False)
    seen = {r.partition for r in recs}
    if len(recs) != count or len(seen) != count:
        raise cli.Failed("read %d records from %d of %d partitions" % (len(recs), len(seen), count))
    return {"records": len(recs), "partitions": count}


def op_admin(a):
    ad = KafkaAdminClient(**common(a))
    name = a.topic + "-admin"
    ad.create_topics([NewTopic(name, 3, -1)], timeout_ms=ms_left(a, 5))
    described = None
    while not cli.expired(a):
        described = ad.describe_topics([name])
        if described and not described[0].get("error_code") and len(described[0]["partitions"]) == 3:
            break
        time.sleep(0.2)
    if not described or len(described[0]["partitions"]) != 3:
        raise cli.Failed("describe of the new topic: %s" % described)
    cluster = ad.describe_cluster()
    # Any broker may answer; one that has not applied the create yet
    # lists without the topic, so ask again within the bound.
    while name not in ad.list_topics():
        if cli.expired(a):
            raise cli.Failed("list_topics lacks %s" % name)
        time.sleep(0.1)
    ad.delete_topics([name], timeout_ms=ms_left(a, 2))
    ad.close()
    return {"records": 0, "brokers": sorted([b["host"], b["port"]] for b in cluster["brokers"])}


def op_produce_move(a):
    log = cli.MoveLog(a)
    a.acks = "all"
    p = producer(a, enable_idempotence=True)
    acked, err, _ = produce_all(a, p, a.records, on_ack=lambda md, i: log.event(md.partition, md.offset, i))
    p.close(timeout=cli.remaining(a))
    log.close()
    if err or acked != a.records:
        raise cli.Failed("%d of %d acknowledged: %s" % (acked, a.records, err))
    return {"records": acked, "max_gap_ms": round(log.max_gap_ms, 1)}


def op_consume_move(a):
    log = cli.MoveLog(a)
    c = group_consumer(a)
    c.subscribe([a.topic])
    seen = set()
    while len(seen) < a.records and not cli.expired(a):
        for recs in c.poll(timeout_ms=poll_ms(a)).values():
            for r in recs:
                log.event(r.partition, r.offset, cli.index_of(r.value))
                seen.add(cli.index_of(r.value))
    c.close(autocommit=False, timeout_ms=ms_left(a, 0))
    log.close()
    if len(seen) < a.records:
        raise cli.Failed("read %d of %d distinct records" % (len(seen), a.records))
    return {"records": log.count, "max_gap_ms": round(log.max_gap_ms, 1)}


if __name__ == "__main__":
    cli.run(CLIENT, kafka.__version__, {
        "metadata": op_metadata, "produce": op_produce, "produce-idempotent": op_produce_idempotent,
        "transactions": op_transactions, "consume-assign": op_consume_assign,
        "consume-group": op_consume_group, "offsets": op_offsets, "large-record": op_large_record,
        "many-partitions": op_many_partitions, "admin": op_admin,
        "produce-move": op_produce_move, "consume-move": op_consume_move}, UNSUPPORTED)

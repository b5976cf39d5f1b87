"""confluent-kafka-python (librdkafka inside its wheel) driven through the
ops of tests/clients' driver protocol. Run with the interpreter of the venv
tools/clients/fetch-python.sh builds."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pycommon"))
import driver_cli as cli  # noqa: E402
import confluent_kafka as ck  # noqa: E402
from confluent_kafka import admin as ckadmin  # noqa: E402

CLIENT = "confluent-kafka-python"
LARGE = 4 * 1024 * 1024  # client-side size limits above a 1 MiB record


def base_conf(a):
    return {"bootstrap.servers": a.bootstrap, "socket.timeout.ms": 10000,
            "broker.address.family": "v4"}


def producer(a, **extra):
    conf = base_conf(a)
    conf.update({"acks": a.acks, "compression.type": a.compression, "linger.ms": 5,
                 "message.timeout.ms": max(1000, int(cli.remaining(a, 2) * 1000))})
    conf.update(extra)
    return ck.Producer(conf)


def consumer(a, group=None, **extra):
    conf = base_conf(a)
    conf.update({"group.id": group or ("assign-" + a.topic), "enable.auto.commit": False,
                 "auto.offset.reset": "earliest", "enable.partition.eof": True})
    conf.update(extra)
    return ck.Consumer(conf)


def partition_count(a, client):
    md = client.list_topics(a.topic, timeout=max(1.0, cli.remaining(a, 1)))
    t = md.topics.get(a.topic)
    if t is None or t.error is not None:
        raise cli.Failed("topic %s not in metadata: %s" % (a.topic, t.error if t else "absent"))
    return len(t.partitions)


def produce_all(a, p, n, prefix="", size=None, partition_of=None, on_ack=None):
    """Produces n records and waits for every delivery report; returns
    (acked, first error, [(partition, offset)])."""
    state = {"acked": 0, "error": "", "where": []}
    size = a.record_size if size is None else size
    pacer = cli.Pacer(a.rate)

    def report(err, msg):
        if err is not None:
            state["error"] = state["error"] or str(err)
            return
        state["acked"] += 1
        state["where"].append((msg.partition(), msg.offset()))
        if on_ack:
            on_ack(msg)

    for i in range(n):
        if cli.expired(a):
            break
        pacer.wait()
        kw = {} if partition_of is None else {"partition": partition_of(i)}
        while True:
            try:
                p.produce(a.topic, key=cli.key(i), value=cli.value(i, size, prefix), on_delivery=report, **kw)
                break
            except BufferError:  # queue full: let deliveries drain
                p.poll(0.05)
        p.poll(0)
    left = p.flush(cli.remaining(a, 1))
    if left:
        state["error"] = state["error"] or "%d records not delivered before the deadline" % left
    return state["acked"], state["error"], state["where"]


def op_metadata(a):
    ad = ckadmin.AdminClient(base_conf(a))
    md = ad.list_topics(a.topic, timeout=max(1.0, cli.remaining(a, 1)))
    brokers = sorted([b.host, b.port] for b in md.brokers.values())
    t = md.topics.get(a.topic)
    if t is None or t.error is not None:
        raise cli.Failed("topic %s: %s" % (a.topic, t.error if t else "absent"))
    return {"brokers": brokers, "partitions": len(t.partitions), "records": 0}


def op_produce(a, **extra):
    p = producer(a, **extra)
    acked, err, _ = produce_all(a, p, a.records)
    if err or acked != a.records:
        raise cli.Failed("%d of %d acknowledged: %s" % (acked, a.records, err))
    return {"records": acked}


def op_produce_idempotent(a):
    a.acks = "all"
    return op_produce(a, **{"enable.idempotence": True})


def read(a, c, want, stop_at_eof=None):
    """Polls until `want` records (or, with stop_at_eof, every partition at
    its end); returns the messages."""
    got, eof = [], set()
    while len(got) < want and not cli.expired(a):
        m = c.poll(min(0.5, max(0.05, cli.remaining(a))))
        if m is None:
            continue
        if m.error() is not None:
            if m.error().code() == ck.KafkaError._PARTITION_EOF:
                eof.add(m.partition())
                if stop_at_eof is not None and eof >= stop_at_eof:
                    break
                continue
            raise cli.Failed("consume: %s" % m.error())
        got.append(m)
    return got


def assign_all(a, c, count):
    c.assign([ck.TopicPartition(a.topic, p, ck.OFFSET_BEGINNING) for p in range(count)])


def op_transactions(a):
    p = producer(a, **{"transactional.id": a.transactional_id, "acks": "all"})
    p.init_transactions(max(1.0, cli.remaining(a, 5)))
    p.begin_transaction()
    acked, err, _ = produce_all(a, p, a.records, prefix="c")
    if err or acked != a.records:
        raise cli.Failed("committed transaction: %d of %d acknowledged: %s" % (acked, a.records, err))
    p.commit_transaction(max(1.0, cli.remaining(a, 5)))
    p.begin_transaction()
    produce_all(a, p, a.records, prefix="a")
    p.abort_transaction(max(1.0, cli.remaining(a, 5)))
    c = consumer(a, **{"isolation.level": "read_committed"})
    count = partition_count(a, c)
    assign_all(a, c, count)
    msgs = read(a, c, 10 * a.records + 1, stop_at_eof=set(range(count)))
    c.close()
    values = [m.value().decode() for m in msgs]
    committed = sorted(v for v in values if v.startswith("c"))
    aborted = [v for v in values if v.startswith("a")]
    want = sorted(cli.value(i, a.record_size, "c") for i in range(a.records))
    if aborted or committed != want:
        raise cli.Failed("read_committed saw %d committed (want %d) and %d aborted records"
                         % (len(committed), len(want), len(aborted)))
    return {"records": len(committed)}


def check_order(msgs):
    last = {}
    for m in msgs:
        if m.offset() <= last.get(m.partition(), -1):
            raise cli.Failed("partition %d: offset %d after %d" % (m.partition(), m.offset(), last[m.partition()]))
        last[m.partition()] = m.offset()


def op_consume_assign(a):
    c = consumer(a)
    assign_all(a, c, a.partitions or partition_count(a, c))
    msgs = read(a, c, a.records)
    c.close()
    check_order(msgs)
    if len(msgs) < a.records:
        raise cli.Failed("read %d of %d records" % (len(msgs), a.records))
    return {"records": len(msgs)}


def group_consumer(a):
    extra = {"group.protocol": a.group_protocol, "enable.partition.eof": False}
    if a.group_protocol == "classic":
        extra["session.timeout.ms"] = 10000
    return consumer(a, group=a.group, **extra)


def op_consume_group(a):
    c = group_consumer(a)
    c.subscribe([a.topic])
    msgs = read(a, c, a.records)
    if msgs:
        c.commit(asynchronous=False)
    c.close()
    check_order(msgs)
    if len(msgs) < a.records:
        raise cli.Failed("read %d of %d records" % (len(msgs), a.records))
    return {"records": len(msgs)}


def op_offsets(a):
    c = consumer(a, group=a.group)
    c.commit(offsets=[ck.TopicPartition(a.topic, 0, 5)], asynchronous=False)
    got = c.committed([ck.TopicPartition(a.topic, 0)], timeout=max(1.0, cli.remaining(a, 1)))
    c.close()
    if got[0].error is not None or got[0].offset != 5:
        raise cli.Failed("committed offset 5, fetched %s (%s)" % (got[0].offset, got[0].error))
    return {"records": 0}


def op_large_record(a):
    size = a.record_size if a.record_size >= 1024 * 1024 else 1024 * 1024
    p = producer(a, **{"message.max.bytes": LARGE})
    acked, err, where = produce_all(a, p, 1, size=size)
    if err or acked != 1:
        raise cli.Failed("produce of a %d-byte record: %s" % (size, err or "not acknowledged"))
    partition, offset = where[0]
    c = consumer(a, **{"fetch.max.bytes": LARGE, "max.partition.fetch.bytes": LARGE,
                       "receive.message.max.bytes": LARGE + 65536})
    c.assign([ck.TopicPartition(a.topic, partition, offset)])
    msgs = read(a, c, 1)
    c.close()
    if not msgs or msgs[0].value() != cli.value(0, size).encode():
        raise cli.Failed("read back %s" % ("nothing" if not msgs else "%d different bytes" % len(msgs[0].value())))
    return {"records": 1}


def op_many_partitions(a):
    # Idempotent, so that a batch retried under load is not stored twice:
    # the op checks one record in each partition.
    p = producer(a, **{"enable.idempotence": True, "acks": "all"})
    count = partition_count(a, p)
    acked, err, _ = produce_all(a, p, count, partition_of=lambda i: i)
    if err or acked != count:
        raise cli.Failed("%d of %d acknowledged: %s" % (acked, count, err))
    c = consumer(a)
    assign_all(a, c, count)
    msgs = read(a, c, 10 * count, stop_at_eof=set(range(count)))
    c.close()
    seen = {m.partition() for m in msgs}
    if len(msgs) != count or len(seen) != count:
        raise cli.Failed("read %d records from %d of %d partitions" % (len(msgs), len(seen), count))
    return {"records": len(msgs), "partitions": count}


def wait_futures(a, futures, what):
    for name, f in futures.items():
        try:
            f.result(timeout=max(1.0, cli.remaining(a, 1)))
        except Exception as e:
            raise cli.Failed("%s %s: %s" % (what, name, e))


def op_admin(a):
    ad = ckadmin.AdminClient(base_conf(a))
    name = a.topic + "-admin"
    wait_futures(a, ad.create_topics([ckadmin.NewTopic(name, 3, -1)],
                                     operation_timeout=max(1.0, cli.remaining(a, 5))), "create")
    described = None
    while not cli.expired(a):
        try:
            described = ad.describe_topics(ck.TopicCollection([name]))[name].result(timeout=max(1.0, cli.remaining(a, 1)))
            if len(described.partitions) == 3:
                break
        except ck.KafkaException:
            pass
        time.sleep(0.2)
    if described is None or len(described.partitions) != 3:
        raise cli.Failed("describe of the new topic: %s" % described)
    cluster = ad.describe_cluster().result(timeout=max(1.0, cli.remaining(a, 1)))
    # Any broker may answer; one that has not applied the create yet
    # lists without the topic, so ask again within the bound.
    while name not in ad.list_topics(timeout=max(1.0, cli.remaining(a, 1))).topics:
        if cli.expired(a):
            raise cli.Failed("list_topics lacks %s" % name)
        time.sleep(0.1)
    wait_futures(a, ad.delete_topics([name], operation_timeout=max(1.0, cli.remaining(a, 5))), "delete")
    return {"records": 0, "brokers": sorted([n.host, n.port] for n in cluster.nodes)}


def set_share_reset(a):
    """Share groups start at the latest offset unless the group says
    otherwise; the harness produced first, so ask for the earliest. The
    mock cluster takes this from its command line instead and may refuse."""
    ad = ckadmin.AdminClient(base_conf(a))
    res = ckadmin.ConfigResource(ckadmin.ResourceType.GROUP, a.group, incremental_configs=[
        ckadmin.ConfigEntry("share.auto.offset.reset", "earliest",
                            incremental_operation=ckadmin.AlterConfigOpType.SET)])
    try:
        for f in ad.incremental_alter_configs([res]).values():
            f.result(timeout=max(1.0, cli.remaining(a, 5)))
    except Exception as e:
        print("share.auto.offset.reset not set: %s" % e, file=sys.stderr)


def op_share_consume(a):
    set_share_reset(a)
    conf = base_conf(a)
    conf["group.id"] = a.group
    c = ck.ShareConsumer(conf)
    c.subscribe([a.topic])
    seen = set()
    while len(seen) < a.records and not cli.expired(a):
        for m in c.poll(min(0.5, max(0.05, cli.remaining(a)))) or []:
            if m.error() is not None:
                raise cli.Failed("share consume: %s" % m.error())
            seen.add((m.partition(), m.offset()))
    try:
        c.commit_sync(max(1.0, cli.remaining(a, 1)))
    finally:
        c.close()
    if len(seen) < a.records:
        raise cli.Failed("read %d of %d records" % (len(seen), a.records))
    return {"records": len(seen)}


def op_produce_move(a):
    log = cli.MoveLog(a)
    a.acks = "all"
    p = producer(a, **{"enable.idempotence": True})
    acked, err, _ = produce_all(a, p, a.records, on_ack=lambda m: log.event(
        m.partition(), m.offset(), cli.index_of(m.value())))
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
        m = c.poll(min(0.5, max(0.05, cli.remaining(a))))
        if m is None:
            continue
        if m.error() is not None:
            print("consume: %s" % m.error(), file=sys.stderr)
            continue
        log.event(m.partition(), m.offset(), cli.index_of(m.value()))
        seen.add(cli.index_of(m.value()))
    c.close()
    log.close()
    if len(seen) < a.records:
        raise cli.Failed("read %d of %d distinct records" % (len(seen), a.records))
    return {"records": log.count, "max_gap_ms": round(log.max_gap_ms, 1)}


if __name__ == "__main__":
    cli.run(CLIENT, ck.version(), {  # the package version (libversion() is librdkafka's)
        "metadata": op_metadata, "produce": op_produce, "produce-idempotent": op_produce_idempotent,
        "transactions": op_transactions, "consume-assign": op_consume_assign,
        "consume-group": op_consume_group, "offsets": op_offsets, "large-record": op_large_record,
        "many-partitions": op_many_partitions, "admin": op_admin, "share-consume": op_share_consume,
        "produce-move": op_produce_move, "consume-move": op_consume_move})

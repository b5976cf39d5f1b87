"""aiokafka (asyncio, pure Python) driven through the ops of tests/clients'
driver protocol. Run with the interpreter of the venv that
tools/clients/fetch-python.sh builds. Each op is one coroutine bounded by
what is left of --timeout-ms."""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pycommon"))
import driver_cli as cli  # noqa: E402
import aiokafka  # noqa: E402
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402

CLIENT = "aiokafka"
V = aiokafka.__version__
LARGE = 4 * 1024 * 1024
UNSUPPORTED = {"share-consume": "aiokafka %s has no share consumer (KIP-932)" % V}


def ms_left(a, reserve=1.0):
    return max(1000, int(cli.remaining(a, reserve) * 1000))


def common(a):
    return {"bootstrap_servers": a.bootstrap.split(","), "request_timeout_ms": min(15000, ms_left(a)),
            "client_id": "aiokafka-driver"}


async def producer(a, **extra):
    conf = common(a)
    conf.update({"acks": "all" if a.acks == "all" else int(a.acks), "linger_ms": 5,
                 "compression_type": None if a.compression == "none" else a.compression,
                 "enable_idempotence": False})
    conf.update(extra)
    p = AIOKafkaProducer(**conf)
    await p.start()
    return p


async def consumer(a, group=None, **extra):
    conf = common(a)
    conf.update({"group_id": group, "enable_auto_commit": False, "auto_offset_reset": "earliest"})
    conf.update(extra)
    c = AIOKafkaConsumer(**conf)
    await c.start()
    return c


async def partition_count(a):
    """The topic's partition count, from an admin client's Metadata (a
    consumer's topics() did not return here once partitions were assigned)."""
    if a.partitions:
        return a.partitions
    ad = await admin(a)
    try:
        topics = await ad.describe_topics([a.topic])
    finally:
        await ad.close()
    if not topics or topics[0].get("error_code") or not topics[0]["partitions"]:
        raise cli.Failed("topic %s not in metadata: %s" % (a.topic, topics))
    return len(topics[0]["partitions"])


async def produce_all(a, p, n, prefix="", size=None, partition_of=None, on_ack=None):
    """Sends n records and waits for each; returns (acked, first error, metadata list)."""
    size = a.record_size if size is None else size
    interval = 1.0 / a.rate if a.rate > 0 else 0.0
    loop = asyncio.get_running_loop()
    next_at = loop.time()
    futures = []
    for i in range(n):
        if cli.expired(a):
            break
        if interval:
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            next_at = max(next_at + interval, loop.time() - interval)
        kw = {} if partition_of is None else {"partition": partition_of(i)}
        f = await p.send(a.topic, key=cli.key(i).encode(), value=cli.value(i, size, prefix).encode(), **kw)
        if on_ack:
            f.add_done_callback(lambda fut, i=i: fut.exception() is None and on_ack(fut.result(), i))
        futures.append(f)
    acked, error, metas = 0, "", []
    for r in await asyncio.gather(*futures, return_exceptions=True):
        if isinstance(r, BaseException):
            error = error or "%s: %s" % (type(r).__name__, r)
        else:
            acked += 1
            metas.append(r)
    return acked, error, metas


async def admin(a):
    ad = AIOKafkaAdminClient(**common(a))
    await ad.start()
    return ad


async def op_metadata(a):
    ad = await admin(a)
    try:
        cluster = await ad.describe_cluster()
        topics = await ad.describe_topics([a.topic])
    finally:
        await ad.close()
    t = topics[0] if topics else None
    if not t or t.get("error_code"):
        raise cli.Failed("topic %s: %s" % (a.topic, t))
    return {"brokers": sorted([b["host"], b["port"]] for b in cluster["brokers"]),
            "partitions": len(t["partitions"]), "records": 0}


async def op_produce(a, **extra):
    p = await producer(a, **extra)
    try:
        acked, err, _ = await produce_all(a, p, a.records)
    finally:
        await p.stop()
    if err or acked != a.records:
        raise cli.Failed("%d of %d acknowledged: %s" % (acked, a.records, err))
    return {"records": acked}


async def op_produce_idempotent(a):
    a.acks = "all"
    return await op_produce(a, enable_idempotence=True)


async def read(a, c, want):
    got = []
    while len(got) < want and not cli.expired(a):
        for recs in (await c.getmany(timeout_ms=min(500, ms_left(a, 0)), max_records=want - len(got))).values():
            got.extend(recs)
    return got


async def assign_all(a, c, count):
    tps = [TopicPartition(a.topic, p) for p in range(count)]
    c.assign(tps)
    await c.seek_to_beginning(*tps)
    return tps


async def op_transactions(a):
    p = await producer(a, transactional_id=a.transactional_id, acks="all")
    try:
        async with p.transaction():
            acked, err, _ = await produce_all(a, p, a.records, prefix="c")
            if err or acked != a.records:
                raise cli.Failed("committed transaction: %d of %d acknowledged: %s" % (acked, a.records, err))
        await p.begin_transaction()
        await produce_all(a, p, a.records, prefix="a")
        await p.abort_transaction()
    finally:
        await p.stop()
    c = await consumer(a, isolation_level="read_committed")
    values = []
    try:
        tps = await assign_all(a, c, await partition_count(a))
        ends = await c.end_offsets(tps)  # the last stable offsets for read_committed
        while not cli.expired(a):
            positions = [await c.position(tp) for tp in tps]
            if all(pos >= ends[tp] for pos, tp in zip(positions, tps)):
                break
            for recs in (await c.getmany(timeout_ms=500)).values():
                values.extend(r.value.decode() for r in recs)
    finally:
        await c.stop()
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


async def op_consume_assign(a):
    c = await consumer(a)
    try:
        await assign_all(a, c, a.partitions or await partition_count(a))
        recs = await read(a, c, a.records)
    finally:
        await c.stop()
    check_order(recs)
    if len(recs) < a.records:
        raise cli.Failed("read %d of %d records" % (len(recs), a.records))
    return {"records": len(recs)}


async def group_consumer(a):
    if a.group_protocol != "classic":
        raise cli.Unsupported("aiokafka %s has no KIP-848 consumer group protocol" % V)
    return await consumer(a, group=a.group, session_timeout_ms=10000, heartbeat_interval_ms=1000)


async def op_consume_group(a):
    c = await group_consumer(a)
    try:
        c.subscribe([a.topic])
        recs = await read(a, c, a.records)
        if recs:
            await c.commit()
    finally:
        await c.stop()
    check_order(recs)
    if len(recs) < a.records:
        raise cli.Failed("read %d of %d records" % (len(recs), a.records))
    return {"records": len(recs)}


async def op_offsets(a):
    c = await consumer(a, group=a.group)
    tp = TopicPartition(a.topic, 0)
    try:
        c.assign([tp])  # aiokafka commits only for partitions it is assigned
        await c.commit({tp: 5})
        got = await c.committed(tp)
    finally:
        await c.stop()
    if got != 5:
        raise cli.Failed("committed offset 5, fetched %s" % got)
    return {"records": 0}


async def op_large_record(a):
    size = max(a.record_size, 1024 * 1024)
    p = await producer(a, max_request_size=LARGE)
    try:
        acked, err, metas = await produce_all(a, p, 1, size=size)
    finally:
        await p.stop()
    if err or acked != 1:
        raise cli.Failed("produce of a %d-byte record: %s" % (size, err or "not acknowledged"))
    c = await consumer(a, fetch_max_bytes=LARGE, max_partition_fetch_bytes=LARGE)
    try:
        tp = TopicPartition(a.topic, metas[0].partition)
        c.assign([tp])
        c.seek(tp, metas[0].offset)
        recs = await read(a, c, 1)
    finally:
        await c.stop()
    if not recs or recs[0].value != cli.value(0, size).encode():
        raise cli.Failed("read back %s" % ("nothing" if not recs else "%d different bytes" % len(recs[0].value)))
    return {"records": 1}


async def op_many_partitions(a):
    p = await producer(a)
    try:
        count = len(await p.partitions_for(a.topic))
        acked, err, _ = await produce_all(a, p, count, partition_of=lambda i: i)
    finally:
        await p.stop()
    if err or acked != count:
        raise cli.Failed("%d of %d acknowledged: %s" % (acked, count, err))
    c = await consumer(a)
    try:
        await assign_all(a, c, count)
        recs = await read(a, c, count)
    finally:
        await c.stop()
    seen = {r.partition for r in recs}
    if len(recs) != count or len(seen) != count:
        raise cli.Failed("read %d records from %d of %d partitions" % (len(recs), len(seen), count))
    return {"records": len(recs), "partitions": count}


def topic_errors(response, key):
    """(name, code) pairs with a non-zero error code in a Create/DeleteTopics response."""
    obj = response.to_object()
    return [(t.get("topic") or t.get("name"), t["error_code"]) for t in obj.get(key, []) if t["error_code"]]


async def op_admin(a):
    ad = await admin(a)
    name = a.topic + "-admin"
    try:
        # aiokafka's NewTopic wants a replication factor: three where there are three brokers.
        rf = min(3, len((await ad.describe_cluster())["brokers"]))
        errors = topic_errors(await ad.create_topics([NewTopic(name, 3, rf)], timeout_ms=ms_left(a, 5)), "topic_errors")
        if errors:
            raise cli.Failed("create %s: %s" % (name, errors))
        described = None
        while not cli.expired(a):
            described = await ad.describe_topics([name])
            if described and not described[0].get("error_code") and len(described[0]["partitions"]) == 3:
                break
            await asyncio.sleep(0.2)
        if not described or len(described[0]["partitions"]) != 3:
            raise cli.Failed("describe of the new topic: %s" % described)
        cluster = await ad.describe_cluster()
        # Any broker may answer; one that has not applied the create yet
        # lists without the topic, so ask again within the bound.
        while name not in await ad.list_topics():
            if cli.expired(a):
                raise cli.Failed("list_topics lacks %s" % name)
            await asyncio.sleep(0.1)
        errors = topic_errors(await ad.delete_topics([name], timeout_ms=ms_left(a, 2)), "topic_error_codes")
        if errors:
            raise cli.Failed("delete %s: %s" % (name, errors))
    finally:
        await ad.close()
    return {"records": 0, "brokers": sorted([b["host"], b["port"]] for b in cluster["brokers"])}


async def op_produce_move(a):
    log = cli.MoveLog(a)
    a.acks = "all"
    p = await producer(a, enable_idempotence=True)
    try:
        acked, err, _ = await produce_all(a, p, a.records, on_ack=lambda md, i: log.event(md.partition, md.offset, i))
    finally:
        await p.stop()
        log.close()
    if err or acked != a.records:
        raise cli.Failed("%d of %d acknowledged: %s" % (acked, a.records, err))
    return {"records": acked, "max_gap_ms": round(log.max_gap_ms, 1)}


async def op_consume_move(a):
    log = cli.MoveLog(a)
    c = await group_consumer(a)
    seen = set()
    try:
        c.subscribe([a.topic])
        while len(seen) < a.records and not cli.expired(a):
            for recs in (await c.getmany(timeout_ms=min(500, ms_left(a, 0)))).values():
                for r in recs:
                    log.event(r.partition, r.offset, cli.index_of(r.value))
                    seen.add(cli.index_of(r.value))
    finally:
        await c.stop()
        log.close()
    if len(seen) < a.records:
        raise cli.Failed("read %d of %d distinct records" % (len(seen), a.records))
    return {"records": log.count, "max_gap_ms": round(log.max_gap_ms, 1)}


def bounded(coro_fn):
    """The op as a plain call: its coroutine run to the end of --timeout-ms."""
    def call(a):
        async def main():
            try:
                return await asyncio.wait_for(coro_fn(a), cli.remaining(a))
            except asyncio.TimeoutError:
                raise cli.Failed("not done within --timeout-ms %d" % a.timeout_ms)
        return asyncio.run(main())
    return call


if __name__ == "__main__":
    ops = {"metadata": op_metadata, "produce": op_produce, "produce-idempotent": op_produce_idempotent,
           "transactions": op_transactions, "consume-assign": op_consume_assign,
           "consume-group": op_consume_group, "offsets": op_offsets, "large-record": op_large_record,
           "many-partitions": op_many_partitions, "admin": op_admin,
           "produce-move": op_produce_move, "consume-move": op_consume_move}
    cli.run(CLIENT, V, {k: bounded(v) for k, v in ops.items()}, UNSUPPORTED)

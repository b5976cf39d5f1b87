"""Python client peer: produce N keyed records with kafka-python or
confluent-kafka (Debian packages, run by /usr/bin/python3), then read them
back in a fresh consumer group and account for every one.

Owns: one produce-then-consume round per run, printed as one JSON line
{client, version, produced, acked, consumed, missing, duplicates,
out_of_order, seconds, error}. Exit 0 only if every acked record came back
exactly once and in order per partition; 77 if the library is missing.
It must never run without deadlines: every blocking call has a timeout.

TLS (security.protocol=SSL) with --ssl-ca [--ssl-cert --ssl-key
[--ssl-key-password]]; host names verified against the certificate as each
library does by default. --resolve NAME=ADDRESS (kafka-python only) answers
this process's own name lookups for NAME (or *.DOMAIN) with ADDRESS, so
brokers advertised as host names that no resolver knows (epochgate's SNI
mode) are dialled on loopback while TLS still sends and verifies the name.
The result then also lists the names looked up and the broker addresses the
client learned from Metadata.
"""

import socket

import argparse
import json
import sys
import time
import uuid


def records(run, n):
    return [(("k%d" % (i % 7)).encode(), ("%s:%d:" % (run, i)).encode() + b"v" * (i % 50))
            for i in range(n)]


def seq_of(run, value):
    prefix = (run + ":").encode()
    if not value or not value.startswith(prefix):
        return None
    return int(value[len(prefix):].split(b":", 1)[0])


class Tally:
    def __init__(self, acked):
        self.acked = acked           # seq -> partition
        self.seen = {}
        self.last = {}
        self.duplicates = 0
        self.out_of_order = 0
        self.misplaced = 0

    def add(self, seq, partition):
        if seq in self.seen:
            self.duplicates += 1
            return
        self.seen[seq] = partition
        if self.acked.get(seq, partition) != partition:
            self.misplaced += 1
        if seq < self.last.get(partition, -1):
            self.out_of_order += 1
        self.last[partition] = max(seq, self.last.get(partition, -1))

    def complete(self):
        return all(s in self.seen for s in self.acked)


def install_resolver(rules, out):
    """Answers getaddrinfo for names matching a rule (NAME or *.DOMAIN) with
    the rule's address; every other name goes to the system resolver. Only
    this process is affected (no /etc/hosts, no resolver configuration)."""
    parsed = []
    for rule in rules:
        name, _, address = rule.partition("=")
        parsed.append((name.lower(), address))
    system = socket.getaddrinfo
    asked = out.setdefault("resolved", [])

    def lookup(host, port, *args, **kwargs):
        name = host.lower() if isinstance(host, str) else host
        for pattern, address in parsed:
            if name == pattern or (pattern.startswith("*.") and isinstance(name, str)
                                   and name.endswith(pattern[1:])):
                if name not in asked:
                    asked.append(name)
                return system(address, port, *args, **kwargs)
        return system(host, port, *args, **kwargs)

    socket.getaddrinfo = lookup


def kafka_python_ssl(opts):
    if not opts.ssl_ca:
        return {}
    conf = {"security_protocol": "SSL", "ssl_cafile": opts.ssl_ca, "ssl_check_hostname": True}
    if opts.ssl_cert:
        conf.update(ssl_certfile=opts.ssl_cert, ssl_keyfile=opts.ssl_key)
    if opts.ssl_key_password:
        with open(opts.ssl_key_password) as f:
            conf["ssl_password"] = f.read().strip()
    return conf


def confluent_ssl(opts):
    if not opts.ssl_ca:
        return {}
    conf = {"security.protocol": "ssl", "ssl.ca.location": opts.ssl_ca}
    if opts.ssl_cert:
        conf.update({"ssl.certificate.location": opts.ssl_cert,
                     "ssl.key.location": opts.ssl_key})
    if opts.ssl_key_password:
        with open(opts.ssl_key_password) as f:
            conf["ssl.key.password"] = f.read().strip()
    return conf


def skip_closed_send_sockets(client_class):
    """kafka-python 2.0.2 (Debian's) queues a connection for its next poll
    when it sends; if the connection closes first (its version probe closes
    connections it opened, a slow TLS handshake times out), the poll looks
    up the closed connection's socket, None, in its selector, and the
    selector's ValueError ends the producer or consumer (only KeyError is
    caught there). A closed connection has nothing left to send (close()
    failed its requests), so those are dropped from the queue before the
    poll. Seen once in the ASan suite, a kafka-python peer through a slow
    epochgate."""
    register = getattr(client_class, "_register_send_sockets", None)
    if register is None or getattr(register, "skips_closed", False):
        return

    def wrapped(self):
        sending = getattr(self, "_sending", None)
        if sending is not None:
            for conn in [c for c in sending if getattr(c, "_sock", None) is None]:
                sending.discard(conn)
        return register(self)

    wrapped.skips_closed = True
    client_class._register_send_sockets = wrapped


def run_kafka_python(opts, run, out):
    try:
        import kafka
        import kafka.client_async
    except ImportError:
        print("kafka-python not installed (apt-get install python3-kafka)", file=sys.stderr)
        sys.exit(77)
    out["version"] = kafka.__version__
    skip_closed_send_sockets(kafka.client_async.KafkaClient)
    if opts.resolve:
        install_resolver(opts.resolve, out)
    tls = kafka_python_ssl(opts)
    producer = kafka.KafkaProducer(bootstrap_servers=opts.bootstrap, acks="all",
                                   request_timeout_ms=15000, max_block_ms=20000,
                                   client_id="epochgate-kafka-python", **tls)
    out["api_version"] = ".".join(str(v) for v in producer.config["api_version"])
    acked = {}
    futures = [(i, producer.send(opts.topic, key=k, value=v))
               for i, (k, v) in enumerate(records(run, opts.messages))]
    out["produced"] = len(futures)
    producer.flush(timeout=30)
    for i, f in futures:
        try:
            md = f.get(timeout=30)
            acked[i] = md.partition
        except Exception as e:  # record the first failure, keep counting
            out.setdefault("error", "produce: %r" % e)
    if opts.ssl_ca or opts.resolve:
        out["brokers"] = sorted("%s:%d" % (b.host, b.port)
                                for b in producer._metadata.brokers())
    producer.close(timeout=10)
    out["acked"] = len(acked)

    tally = Tally(acked)
    consumer = kafka.KafkaConsumer(bootstrap_servers=opts.bootstrap,
                                   group_id=opts.group, auto_offset_reset="earliest",
                                   enable_auto_commit=False, consumer_timeout_ms=1000,
                                   client_id="epochgate-kafka-python", **tls)
    # Learn the topic's partitions before joining: joining first yields an
    # empty assignment and a second rebalance the mock cluster only completes
    # after a session timeout (~10 s).
    meta_deadline = time.monotonic() + 15
    while not consumer.partitions_for_topic(opts.topic) and time.monotonic() < meta_deadline:
        time.sleep(0.1)
    consumer.subscribe([opts.topic])
    deadline = time.monotonic() + opts.timeout
    while time.monotonic() < deadline and not tally.complete():
        for batch in consumer.poll(timeout_ms=500).values():
            for m in batch:
                seq = seq_of(run, m.value)
                if seq is not None:
                    tally.add(seq, m.partition)
    consumer.close()
    return tally


def run_confluent(opts, run, out):
    try:
        import confluent_kafka
    except ImportError:
        print("confluent-kafka not installed (apt-get install python3-confluent-kafka)",
              file=sys.stderr)
        sys.exit(77)
    out["version"] = confluent_kafka.version()[0]
    out["librdkafka"] = confluent_kafka.libversion()[0]
    if opts.resolve:
        print("--resolve needs kafka-python (librdkafka 2.0.2 has no resolve_cb)",
              file=sys.stderr)
        sys.exit(2)
    tls = confluent_ssl(opts)
    acked = {}

    def on_delivery(err, msg, i):
        if err is None:
            acked[i] = msg.partition()
        else:
            out.setdefault("error", "produce: %s" % err)

    producer = confluent_kafka.Producer({"bootstrap.servers": opts.bootstrap, "acks": "all",
                                         "client.id": "epochgate-confluent-kafka",
                                         "message.timeout.ms": 30000, **tls})
    recs = records(run, opts.messages)
    for i, (k, v) in enumerate(recs):
        while True:
            try:
                producer.produce(opts.topic, key=k, value=v,
                                 on_delivery=lambda err, msg, i=i: on_delivery(err, msg, i))
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    out["produced"] = len(recs)
    left = producer.flush(30)
    if left:
        out.setdefault("error", "flush: %d messages still queued" % left)
    out["acked"] = len(acked)

    tally = Tally(acked)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": opts.bootstrap,
                                         "group.id": opts.group,
                                         "auto.offset.reset": "earliest",
                                         "enable.auto.commit": False,
                                         "client.id": "epochgate-confluent-kafka", **tls})
    consumer.subscribe([opts.topic])
    deadline = time.monotonic() + opts.timeout
    while time.monotonic() < deadline and not tally.complete():
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error():
            out.setdefault("consume_error", str(m.error()))
            continue
        seq = seq_of(run, m.value())
        if seq is not None:
            tally.add(seq, m.partition())
    consumer.close()
    return tally


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=["kafka-python", "confluent-kafka"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", default="epochgate-peer-" + uuid.uuid4().hex[:8])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=30.0, help="consume deadline (s)")
    parser.add_argument("--ssl-ca", help="CA file: security.protocol=SSL")
    parser.add_argument("--ssl-cert", help="client certificate (mTLS)")
    parser.add_argument("--ssl-key", help="client key (mTLS)")
    parser.add_argument("--ssl-key-password", help="file holding the key's password")
    parser.add_argument("--resolve", action="append", default=[],
                        help="NAME=ADDRESS or *.DOMAIN=ADDRESS (kafka-python only)")
    opts = parser.parse_args()
    run = uuid.uuid4().hex
    out = {"client": opts.client}
    started = time.monotonic()
    tally = (run_kafka_python if opts.client == "kafka-python" else run_confluent)(opts, run, out)
    out.update({
        "consumed": len(tally.seen) + tally.duplicates,
        "missing": sum(1 for s in tally.acked if s not in tally.seen),
        "duplicates": tally.duplicates,
        "out_of_order": tally.out_of_order,
        "misplaced": tally.misplaced,
        "partitions": sorted(set(tally.acked.values())),
        "seconds": round(time.monotonic() - started, 3),
    })
    ok = (out["acked"] == out["produced"] == opts.messages and out["missing"] == 0
          and out["duplicates"] == 0 and out["out_of_order"] == 0 and out["misplaced"] == 0)
    out["passed"] = ok
    print(json.dumps(out, sort_keys=True))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

"""SASL client peer: kafka-python or confluent-kafka (Debian packages, run by
/usr/bin/python3) logging in with one SASL mechanism, then producing N
records and reading them back in a fresh consumer group.

Owns: one login-produce-consume round per run, printed as one JSON line
{client, mechanism, produced, acked, consumed, missing, duplicates,
error_kind, error, seconds}. With wrong credentials the round fails and
error_kind/error say how the client reported it (compared by the tests,
direct against through epochgate). Exit 0 when every acked record came back
exactly once, 1 otherwise, 77 if the library is missing.
Every blocking call has a deadline.
"""

import argparse
import base64
import json
import sys
import time
import uuid


def unsecured_jws(principal, lifetime_s=3600):
    """An unsecured JWS (RFC 7515 alg "none") as OAUTHBEARER's token."""
    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    now = int(time.time())
    return "%s.%s." % (b64({"alg": "none"}),
                       b64({"sub": principal, "iat": now, "exp": now + lifetime_s}))


def kafka_python_round(opts, out):
    try:
        import kafka
        from kafka.oauth.abstract import AbstractTokenProvider
    except ImportError:
        print("kafka-python not installed (apt-get install python3-kafka)", file=sys.stderr)
        sys.exit(77)
    out["version"] = kafka.__version__
    common = dict(bootstrap_servers=opts.bootstrap, security_protocol="SASL_PLAINTEXT",
                  sasl_mechanism=opts.mechanism, client_id="epochgate-sasl-kafka-python",
                  api_version_auto_timeout_ms=8000)
    if opts.mechanism == "OAUTHBEARER":
        class Provider(AbstractTokenProvider):
            def token(self):
                return unsecured_jws(opts.username)
        common["sasl_oauth_token_provider"] = Provider()
    else:
        common.update(sasl_plain_username=opts.username, sasl_plain_password=opts.password)
    producer = kafka.KafkaProducer(acks="all", max_block_ms=10000, request_timeout_ms=10000,
                                   **common)
    futures = [producer.send(opts.topic, value=("%s:%d" % (opts.run, i)).encode())
               for i in range(opts.messages)]
    producer.flush(timeout=20)
    acked = 0
    for f in futures:
        f.get(timeout=20)
        acked += 1
    producer.close(timeout=10)
    out["acked"] = acked
    consumer = kafka.KafkaConsumer(group_id="g-" + opts.run, auto_offset_reset="earliest",
                                   enable_auto_commit=False, consumer_timeout_ms=1000, **common)
    deadline = time.monotonic() + 15
    while not consumer.partitions_for_topic(opts.topic) and time.monotonic() < deadline:
        time.sleep(0.1)
    consumer.subscribe([opts.topic])
    seen = []
    deadline = time.monotonic() + opts.timeout
    while time.monotonic() < deadline and len(set(seen)) < acked:
        for batch in consumer.poll(timeout_ms=500).values():
            seen += [m.value.decode() for m in batch if m.value.startswith(opts.run.encode())]
    consumer.close()
    return seen


def confluent_round(opts, out):
    try:
        import confluent_kafka
    except ImportError:
        print("confluent-kafka not installed (apt-get install python3-confluent-kafka)",
              file=sys.stderr)
        sys.exit(77)
    out["version"] = confluent_kafka.version()[0]
    out["librdkafka"] = confluent_kafka.libversion()[0]
    errors = []
    common = {"bootstrap.servers": opts.bootstrap, "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanisms": opts.mechanism, "client.id": "epochgate-sasl-confluent",
              "error_cb": lambda e: errors.append(str(e))}
    if opts.mechanism == "OAUTHBEARER":
        common["sasl.oauthbearer.config"] = "principal=%s" % opts.username
        common["enable.sasl.oauthbearer.unsecure.jwt"] = True
    else:
        common.update({"sasl.username": opts.username, "sasl.password": opts.password})
    acked = []
    producer = confluent_kafka.Producer(dict(common, **{"acks": "all",
                                                         "message.timeout.ms": 10000}))
    for i in range(opts.messages):
        producer.produce(opts.topic, value=("%s:%d" % (opts.run, i)).encode(),
                         on_delivery=lambda err, msg: acked.append(err))
    producer.flush(15)
    failures = [str(e) for e in acked if e is not None]
    out["acked"] = sum(1 for e in acked if e is None)
    if failures or out["acked"] < opts.messages:
        raise RuntimeError("produce failed: %s" % (errors[:1] or failures[:1] or ["timeout"])[0])
    consumer = confluent_kafka.Consumer(dict(common, **{"group.id": "g-" + opts.run,
                                                         "auto.offset.reset": "earliest",
                                                         "enable.auto.commit": False}))
    consumer.subscribe([opts.topic])
    seen = []
    deadline = time.monotonic() + opts.timeout
    while time.monotonic() < deadline and len(set(seen)) < out["acked"]:
        m = consumer.poll(0.5)
        if m is None or m.error():
            continue
        if m.value().startswith(opts.run.encode()):
            seen.append(m.value().decode())
    consumer.close()
    return seen


def error_kind(exc):
    """How the client reported a failure: its exception class, and for
    librdkafka the SASL error text without timings or broker names."""
    text = str(exc)
    marker = "SASL authentication error: "
    if marker in text:
        reason = text.split(marker, 1)[1]
        return "sasl_authentication_error: " + reason.split(" (after")[0]
    return type(exc).__name__


def main():
    p = argparse.ArgumentParser()
    p.add_argument("client", choices=["kafka-python", "confluent-kafka"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--mechanism", required=True)
    p.add_argument("--username", default="alice")
    p.add_argument("--password", default="")
    p.add_argument("--messages", type=int, default=50)
    p.add_argument("--timeout", type=float, default=20.0)
    opts = p.parse_args()
    opts.run = uuid.uuid4().hex
    out = {"client": opts.client, "mechanism": opts.mechanism, "produced": opts.messages,
           "acked": 0, "error_kind": None}
    started = time.monotonic()
    seen = []
    try:
        seen = (kafka_python_round if opts.client == "kafka-python" else confluent_round)(opts, out)
    except Exception as e:  # the failure is the result being compared
        out["error_kind"] = error_kind(e)
        out["error"] = str(e)[:300]
    out["consumed"] = len(seen)
    out["duplicates"] = len(seen) - len(set(seen))
    out["missing"] = out["acked"] - len(set(seen))
    out["seconds"] = round(time.monotonic() - started, 3)
    ok = (out["error_kind"] is None and out["acked"] == opts.messages and out["missing"] == 0
          and out["duplicates"] == 0)
    out["passed"] = ok
    print(json.dumps(out, sort_keys=True))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

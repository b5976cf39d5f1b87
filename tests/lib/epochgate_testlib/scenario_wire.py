"""Kafka frames the fencing scenarios send and read by hand, on top of
tests/lib/epochgate_testlib/kafka_wire.py (whose primitives it reuses, never copies).

Owns: Produce v8 (classic) and v9/v10 (flexible, KIP-951 tags) requests for
several partitions and their responses; Fetch v9-v12 requests (with
CurrentLeaderEpoch, SessionEpoch, LastFetchedEpoch) and responses
(DivergingEpoch and CurrentLeader tags); a Fetch
request decoder for what a recording relay saw; Metadata v12 (topic ids).
Written from the protocol's field layout (Kafka's JSON schemas). It must never
import epochgate code or share its codec, so it stays an independent check.
Raises kafka_wire.WireError on malformed input.
"""

import struct

from . import kafka_wire as kw

NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
UNKNOWN_TOPIC_ID = 100


# ------------------------------------------------------------- compact forms

class FlexWriter(kw.Writer):
    """kafka_wire.Writer plus the compact (flexible-version) forms."""

    def compact_bytes(self, b):
        if b is None:
            return self.uvarint(0)
        self.uvarint(len(b) + 1)
        self.buf += b
        return self

    def compact_array(self, items, write_item):
        if items is None:
            return self.uvarint(0)
        self.uvarint(len(items) + 1)
        for item in items:
            write_item(self, item)
        return self


class FlexReader(kw.Reader):
    """kafka_wire.Reader plus the compact forms and tagged fields by tag."""

    def compact_string(self):
        n = self.uvarint()
        return None if n == 0 else self._take(n - 1).decode()

    def compact_bytes(self):
        n = self.uvarint()
        return None if n == 0 else self._take(n - 1)

    def compact_array(self, read_item):
        n = self.uvarint()
        if n == 0:
            return None
        if n - 1 > self.remaining():
            raise kw.WireError("compact array length %d exceeds frame" % (n - 1))
        return [read_item(self) for _ in range(n - 1)]

    def tagged(self):
        """{tag: raw bytes} of one tagged-field section."""
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self._take(self.uvarint())
        return out


def _leader_and_epoch(raw):
    r = FlexReader(raw)
    leader, epoch = r.int32(), r.int32()
    r.tags()
    return leader, epoch


def _epoch_end_offset(raw):
    """Fetch's DivergingEpoch tag (EpochEndOffset): (epoch, end offset)."""
    r = FlexReader(raw)
    epoch, end = r.int32(), r.int64()
    r.tags()
    return epoch, end


def _node_endpoints(raw):
    r = FlexReader(raw)

    def node(r):
        n = (r.int32(), r.compact_string(), r.int32(), r.compact_string())
        r.tags()
        return n

    return {n[0]: (n[1], n[2], n[3]) for n in r.compact_array(node) or []}


# ------------------------------------------------------------------- Produce

def produce_request(correlation_id, topic, batches, acks, version, timeout_ms=10000):
    """Produce v3-v10 for one topic and several partitions. `batches` is
    [(partition, record_batch bytes)] in request order. v9+ is flexible
    (header v2); v10 has the same request layout as v9."""
    flexible = version >= 9
    if flexible:
        w = FlexWriter().compact_string(None).int16(acks).int32(timeout_ms)

        def part(w, pb):
            w.int32(pb[0]).compact_bytes(pb[1]).empty_tags()

        w.compact_array([topic], lambda w, t: w.compact_string(t).compact_array(batches, part)
                        .empty_tags())
        w.empty_tags()
    else:
        w = kw.Writer().string(None).int16(acks).int32(timeout_ms)
        w.array([topic], lambda w, t: w.string(t).array(
            batches, lambda w, pb: w.int32(pb[0]).bytes_(pb[1])))
    return kw.request_frame(kw.API_PRODUCE, version, correlation_id, w.getvalue(),
                            flexible=flexible)


def parse_produce_response(frame, version):
    """Produce v5-v10 -> dict: correlation_id, partitions [(topic, index,
    error, base_offset, current_leader (id, epoch) or None)] in response order,
    throttle_ms, node_endpoints {id: (host, port, rack)}."""
    flexible = version >= 9
    r = FlexReader(frame[4:])
    corr = r.int32()
    if flexible:
        r.tags()  # response header v1
    parts = []

    def partition(r, topic):
        idx, err, base = r.int32(), r.int16(), r.int64()
        r.int64()  # log_append_time_ms
        r.int64()  # log_start_offset
        leader = None
        if version >= 8:
            if flexible:
                def rec_err(r):
                    r.int32()
                    r.compact_string()
                    r.tags()
                r.compact_array(rec_err)
                r.compact_string()  # error_message
                tags = r.tagged()
                if 0 in tags and version >= 10:
                    leader = _leader_and_epoch(tags[0])
            else:
                r.array(lambda r: (r.int32(), r.string()))
                r.string()
        parts.append((topic, idx, err, base, leader))

    def topic(r):
        name = r.compact_string() if flexible else r.string()
        if flexible:
            r.compact_array(lambda r: partition(r, name))
            r.tags()
        else:
            r.array(lambda r: partition(r, name))

    if flexible:
        r.compact_array(topic)
    else:
        r.array(topic)
    throttle = r.int32()
    endpoints = {}
    if flexible:
        tags = r.tagged()
        if 0 in tags and version >= 10:
            endpoints = _node_endpoints(tags[0])
    return {"correlation_id": corr, "partitions": parts, "throttle_ms": throttle,
            "node_endpoints": endpoints}


# --------------------------------------------------------------------- Fetch

def fetch_request(correlation_id, topic, partitions, version=12, session_epoch=-1,
                  max_wait_ms=0, min_bytes=0):
    """Fetch v9-v16 for one topic: its name up to v12, its 16-byte id (bytes)
    from v13. `partitions` is [(partition, current_leader_epoch,
    fetch_offset[, last_fetched_epoch])]; LastFetchedEpoch (v12+, KIP-595)
    is -1 when left out. SessionId 0 and SessionEpoch -1 make it sessionless
    (KIP-227), as librdkafka's fetches. v15 drops ReplicaId (a consumer sends
    no ReplicaState); v16 has the same request layout as v15."""
    if not 9 <= version <= 16:
        raise ValueError("Fetch v9-v16 only")
    flexible = version >= 12
    w = FlexWriter() if flexible else kw.Writer()
    if version <= 14:
        w.int32(-1)  # ReplicaId: a consumer
    w.int32(max_wait_ms).int32(min_bytes).int32(0x7FFFFFFF).int8(0)
    w.int32(0).int32(session_epoch)

    def part(w, p):
        w.int32(p[0]).int32(p[1]).int64(p[2])
        if version >= 12:
            w.int32(p[3] if len(p) > 3 else -1)  # LastFetchedEpoch
        w.int64(-1).int32(1 << 20)
        if flexible:
            w.empty_tags()

    def topic_ref(w, t):
        if version >= 13:
            if len(t) != 16:
                raise ValueError("Fetch v13+ names topics by their 16-byte id")
            return w.raw(t)
        return w.compact_string(t) if flexible else w.string(t)

    if flexible:
        w.compact_array([topic], lambda w, t: topic_ref(w, t).compact_array(partitions, part)
                        .empty_tags())
        w.compact_array([], None)  # ForgottenTopicsData
        w.compact_string("")       # RackId (v11+)
        w.empty_tags()
    else:
        w.array([topic], lambda w, t: topic_ref(w, t).array(partitions, part))
        w.array([], None)
        if version >= 11:
            w.string("")
    return kw.request_frame(kw.API_FETCH, version, correlation_id, w.getvalue(),
                            flexible=flexible)


def parse_fetch_request(frame):
    """Decodes a Fetch v9-v16 request frame (size prefix included) as it
    crossed a relay: dict api_version, correlation_id, session_epoch,
    partitions {(topic name or 16-byte id, partition): current_leader_epoch}."""
    r = FlexReader(frame[4:])
    key, version, corr = r.int16(), r.int16(), r.int32()
    if key != kw.API_FETCH or not 9 <= version <= 16:
        raise kw.WireError("not a Fetch v9-v16 request: key %d v%d" % (key, version))
    r.string()  # client id
    flexible = version >= 12
    if flexible:
        r.tags()
    if version <= 14:
        r.int32()  # replica id
    r.int32()
    r.int32()
    r.int32()
    r.int8()
    r.int32()
    session_epoch = r.int32()
    out = {}

    def part(r, topic):
        p, epoch = r.int32(), r.int32()
        r.int64()
        if version >= 12:
            r.int32()
        r.int64()
        r.int32()
        if flexible:
            r.tags()
        out[(topic, p)] = epoch

    def topic(r):
        if version >= 13:
            name = r._take(16)
        else:
            name = r.compact_string() if flexible else r.string()
        if flexible:
            r.compact_array(lambda r: part(r, name))
            r.tags()
        else:
            r.array(lambda r: part(r, name))

    if flexible:
        r.compact_array(topic)
    else:
        r.array(topic)
    return {"api_version": version, "correlation_id": corr, "session_epoch": session_epoch,
            "partitions": out}


def parse_fetch_response(frame, version=12):
    """Fetch v9-v16 -> dict: correlation_id, error, partitions {(topic, p):
    {error, high_watermark, records (bytes or None), current_leader,
    diverging_epoch ((epoch, end_offset) or None)}} where
    topic is the name (v9-v12) or the 16-byte id (v13+), node_endpoints
    {id: (host, port, rack)} (v16)."""
    flexible = version >= 12
    r = FlexReader(frame[4:])
    corr = r.int32()
    if flexible:
        r.tags()
    r.int32()  # throttle
    error = r.int16()
    r.int32()  # session id
    parts = {}

    def aborted(r):
        r.int64()
        r.int64()
        if flexible:
            r.tags()

    def partition(r, topic):
        idx, err, hw = r.int32(), r.int16(), r.int64()
        r.int64()  # last stable offset
        r.int64()  # log start offset
        if flexible:
            r.compact_array(aborted)
        else:
            r.array(aborted)
        if version >= 11:
            r.int32()  # preferred read replica
        records = r.compact_bytes() if flexible else r.bytes_()
        leader = diverging = None
        if flexible:
            tags = r.tagged()
            if 0 in tags:
                diverging = _epoch_end_offset(tags[0])
            if 1 in tags:
                leader = _leader_and_epoch(tags[1])
        parts[(topic, idx)] = {"error": err, "high_watermark": hw, "records": records,
                               "current_leader": leader, "diverging_epoch": diverging}

    def topic(r):
        if version >= 13:
            name = r._take(16)
        else:
            name = r.compact_string() if flexible else r.string()
        if flexible:
            r.compact_array(lambda r: partition(r, name))
            r.tags()
        else:
            r.array(lambda r: partition(r, name))

    endpoints = {}
    if flexible:
        r.compact_array(topic)
        tags = r.tagged()
        if 0 in tags and version >= 16:
            endpoints = _node_endpoints(tags[0])
    else:
        r.array(topic)
    return {"correlation_id": corr, "error": error, "partitions": parts,
            "node_endpoints": endpoints}


def record_values(records):
    """Values of every record in a run of uncompressed record batches (v2)."""
    values = []
    r = FlexReader(records or b"")
    while r.remaining() >= 61:
        r.int64()  # base offset
        length = r.int32()
        batch = FlexReader(r._take(length))
        batch.int32()  # partition leader epoch
        if batch.int8() != 2:
            raise kw.WireError("record batch magic is not 2")
        batch.int32()  # crc
        attributes = batch.int16()
        if attributes & 0x7:
            raise kw.WireError("compressed batch: not decoded here")
        batch._take(4 + 8 + 8 + 8 + 2 + 4)
        count = batch.int32()
        for _ in range(count):
            _zigzag(batch)  # record length
            batch.int8()
            _zigzag(batch)
            _zigzag(batch)
            klen = _zigzag(batch)
            if klen > 0:
                batch._take(klen)
            vlen = _zigzag(batch)
            values.append(batch._take(vlen) if vlen >= 0 else None)
            for _ in range(_zigzag(batch)):  # headers
                batch._take(max(0, _zigzag(batch)))
                hv = _zigzag(batch)
                if hv > 0:
                    batch._take(hv)
    return values


def _zigzag(r):
    v = r.uvarint()
    return (v >> 1) ^ -(v & 1)


# ------------------------------------------------------------------ Metadata

def metadata_request_v12(correlation_id, topics):
    """Metadata v12 (flexible, topic ids in the response) for named topics."""
    w = FlexWriter()

    def topic(w, t):
        w.raw(b"\x00" * 16).compact_string(t).empty_tags()

    w.compact_array(topics, topic)
    w.boolean(False)  # allow auto topic creation
    w.boolean(False)  # include topic authorized operations
    w.empty_tags()
    return kw.request_frame(kw.API_METADATA, 12, correlation_id, w.getvalue(), flexible=True)


def parse_metadata_response_v12(frame):
    """Metadata v12 -> dict: brokers {id: (host, port)}, topics {name:
    {error, topic_id (hex), partitions {index: {error, leader, leader_epoch}}}}."""
    r = FlexReader(frame[4:])
    corr = r.int32()
    r.tags()
    r.int32()

    def broker(r):
        b = (r.int32(), r.compact_string(), r.int32(), r.compact_string())
        r.tags()
        return b

    brokers = {b[0]: (b[1], b[2]) for b in r.compact_array(broker) or []}
    r.compact_string()
    r.int32()

    def partition(r):
        p = {"error": r.int16(), "index": r.int32(), "leader": r.int32(),
             "leader_epoch": r.int32()}
        r.compact_array(lambda r: r.int32())
        r.compact_array(lambda r: r.int32())
        r.compact_array(lambda r: r.int32())
        r.tags()
        return p

    def topic(r):
        error, name, tid = r.int16(), r.compact_string(), r._take(16).hex()
        r.boolean()
        parts = r.compact_array(partition) or []
        r.int32()
        r.tags()
        return name, {"error": error, "topic_id": tid,
                      "partitions": {p["index"]: p for p in parts}}

    topics = dict(r.compact_array(topic) or [])
    return {"correlation_id": corr, "brokers": brokers, "topics": topics}


def frames_of(data):
    """Every complete size-prefixed frame in a byte string."""
    frames, _ = kw.split_frames(data)
    return frames


def frame_api(frame):
    """(api_key, api_version) of a request frame."""
    return struct.unpack_from(">hh", frame, 4)

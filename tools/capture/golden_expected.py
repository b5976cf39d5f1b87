#!/usr/bin/env python3
"""tools/capture/golden_expected.py: values of the golden frames as
Wireshark's Kafka dissector reads them, written to
tests/codec/golden/expected_tshark.txt for tests/codec/golden_frames_test.cc.

Our codec decodes the golden frames and re-encodes them byte for byte; a
field order mistake made the same way in the decoder and the encoder would
pass that. So the test also compares decoded values with what an
independent parser (tshark 4.0's Kafka dissector, which shares no code or
schema with ours) says the frames contain.

For each request in tests/codec/golden/manifest.txt and the response with
the same correlation id from the same source, this writes both frames as one
TCP conversation into a pcap (client 127.0.0.1:50000, broker 127.0.0.1:9092,
so tshark matches the response to its request), runs
    tshark -r PCAP -d tcp.port==9092,kafka -T fields -e ...
and keeps the values of frames tshark dissects without an expert warning
(it supports only older versions of several APIs: Produce v0-8, for one).

    /usr/bin/python3 tools/capture/golden_expected.py [--golden tests/codec/golden]

Output lines: FILE FIELD VALUE[,VALUE...] (values in frame order, as tshark
lists them). Needs tshark (apt-get install tshark); only this generator
does, the test reads the committed file. Must never: write anything but
the output file and files under a temporary directory it removes.
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile

FIELDS = ["kafka.correlation_id", "kafka.api_key", "kafka.api_version", "kafka.client_id",
          "kafka.required_acks", "kafka.topic_name", "kafka.partition_id",
          "kafka.current_leader_epoch", "kafka.leader_epoch", "kafka.error", "kafka.offset",
          "_ws.expert.severity", "kafka.response_frame", "kafka.request_frame"]
CLIENT, BROKER = 50000, 9092


def load_manifest(golden):
    rows = []
    with open(os.path.join(golden, "manifest.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, direction, key, version, source = line.split()
                rows.append((name, direction, int(key), int(version), source))
    return rows


def tcp_packet(src_port, dst_port, seq, ack, payload):
    """Ethernet + IPv4 + TCP (PSH|ACK) around `payload`; checksums left 0
    (tshark does not validate them by default)."""
    tcp = struct.pack(">HHIIBBHHH", src_port, dst_port, seq, ack, 5 << 4, 0x18, 65535, 0, 0)
    ip_len = 20 + len(tcp) + len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, ip_len, 1, 0, 64, 6, 0,
                     bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1]))
    eth = b"\x00" * 12 + b"\x08\x00"
    return eth + ip + tcp + payload


def write_pcap(path, frames):
    """frames: [(from_client, bytes)] as one TCP conversation."""
    seq = {True: 1000, False: 5000}
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        for i, (from_client, data) in enumerate(frames):
            src, dst = (CLIENT, BROKER) if from_client else (BROKER, CLIENT)
            pkt = tcp_packet(src, dst, seq[from_client], seq[not from_client], data)
            seq[from_client] += len(data)
            f.write(struct.pack("<IIII", 1700000000 + i, 0, len(pkt), len(pkt)))
            f.write(pkt)


def corr_of(data, request):
    return struct.unpack(">i", data[8:12] if request else data[4:8])[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--golden", default=os.path.join(here, "..", "..", "tests", "codec", "golden"))
    ap.add_argument("--tshark", default=shutil.which("tshark"))
    o = ap.parse_args()
    if not o.tshark:
        sys.exit("tshark not found (apt-get install tshark)")
    version = subprocess.run([o.tshark, "--version"], capture_output=True, text=True).stdout
    rows = load_manifest(o.golden)
    data = {}
    for name, *_ in rows:
        with open(os.path.join(o.golden, name), "rb") as f:
            data[name] = f.read()
    responses = {}
    for name, direction, key, ver, source in rows:
        if direction == "response":
            responses.setdefault((source, key, ver, corr_of(data[name], False)), name)
    out = ["# FILE FIELD VALUES: the golden frames as the Kafka dissector of %s reads them"
           % version.splitlines()[0].strip().rstrip("."),
           "# (written by tools/capture/golden_expected.py; frames it warns about are left out)"]
    done = set()
    tmp = tempfile.mkdtemp(prefix="golden-expected-")
    try:
        for name, direction, key, ver, source in rows:
            if direction != "request":
                continue
            resp = responses.get((source, key, ver, corr_of(data[name], True)))
            frames = [(True, data[name])] + ([(False, data[resp])] if resp else [])
            pcap = os.path.join(tmp, "pair.pcap")
            write_pcap(pcap, frames)
            argv = [o.tshark, "-r", pcap, "-d", "tcp.port==%d,kafka" % BROKER, "-T", "fields",
                    "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]
            for field in FIELDS:
                argv += ["-e", field]
            r = subprocess.run(argv, capture_output=True, text=True, check=True)
            lines = r.stdout.rstrip("\n").split("\n")
            for file_name, line in zip([name] + ([resp] if resp else []), lines):
                if file_name in done:
                    continue
                done.add(file_name)
                values = dict(zip(FIELDS, line.split("\t")))
                if values.get("_ws.expert.severity"):
                    out.append("# %s: tshark warned (%s), not used" % (
                        file_name, values["_ws.expert.severity"]))
                    continue
                for field in FIELDS:
                    v = values.get(field, "")
                    if v and not field.startswith("_ws") and not field.endswith("_frame"):
                        out.append("%s %s %s" % (file_name, field[len("kafka."):], v))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    path = os.path.join(o.golden, "expected_tshark.txt")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print("wrote %s (%d lines)" % (path, len(out)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tools/capture/kafka_relay.py: a loopback TCP relay that sits between Kafka
clients and one broker and records every frame it forwards, with direction,
API key and version (responses are matched to requests by correlation id).

Used by capture_golden.py to collect golden frames exchanged by independent
implementations (librdkafka, kcat, kafka-python). Standalone:
  kafka_relay.py --upstream 127.0.0.1:9092 [--listen 0]   # logs frames to stdout

Bytes are forwarded unchanged; a request is parsed before it is forwarded so
its correlation id is known before the response can arrive.
Must never: alter a byte, or listen anywhere but 127.0.0.1. Stdlib only.
"""

import argparse
import socket
import struct
import sys
import threading


class Relay:
    """Accepts clients on 127.0.0.1:<port> and connects each to `upstream`.
    `on_frame(source, direction, api_key, api_version, frame_bytes)` is called
    for every complete frame (frame_bytes include the 4-byte size prefix);
    `source` is whatever `self.source` was when the connection was accepted."""

    def __init__(self, upstream, on_frame, listen_port=0):
        host, port = upstream.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.on_frame = on_frame
        self.source = "unknown"
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen_port))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.closed = False
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
        for s in list(self.conns):
            try:
                s.close()
            except OSError:
                pass

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            self.conns += [client, server]
            state = {"inflight": {}, "source": self.source}
            threading.Thread(target=self._pump, args=(client, server, "request", state),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, "response", state),
                             daemon=True).start()

    def _pump(self, src, dst, direction, state):
        buf = b""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            buf += data
            while len(buf) >= 4:
                (size,) = struct.unpack(">i", buf[:4])
                if size < 0 or len(buf) < 4 + size:
                    break
                frame, buf = buf[:4 + size], buf[4 + size:]
                self._frame(direction, frame, state)
            try:
                dst.sendall(data)
            except OSError:
                return

    def _frame(self, direction, frame, state):
        if direction == "request":
            if len(frame) < 12:
                return
            key, ver, corr = struct.unpack(">hhi", frame[4:12])
            with self.lock:
                state["inflight"][corr] = (key, ver)
        else:
            if len(frame) < 8:
                return
            (corr,) = struct.unpack(">i", frame[4:8])
            with self.lock:
                key, ver = state["inflight"].pop(corr, (-1, -1))
        self.on_frame(state["source"], direction, key, ver, frame)


def main():
    ap = argparse.ArgumentParser(description="Kafka frame-logging TCP relay (loopback)")
    ap.add_argument("--upstream", required=True, help="broker HOST:PORT")
    ap.add_argument("--listen", type=int, default=0, help="port on 127.0.0.1 (0: any)")
    args = ap.parse_args()

    def log(source, direction, key, ver, frame):
        print(f"{direction:8} api={key:3} v={ver:2} bytes={len(frame)}", flush=True)

    relay = Relay(args.upstream, log, args.listen)
    print(f"listening on 127.0.0.1:{relay.port}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        relay.close()


if __name__ == "__main__":
    sys.exit(main())

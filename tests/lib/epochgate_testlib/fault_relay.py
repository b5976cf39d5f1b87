"""Fault-injecting Kafka relay for the upstream fault tests.

Owns: a loopback listener that forwards every accepted connection to one
upstream broker, reads the responses frame by frame, and misbehaves on the
responses to requests whose correlation id the test marked: cut the
connection in the middle of the frame, stall in the middle of it (the
sockets stay open, nothing more is relayed), send a size prefix that is too large
or negative, or replace the body with garbage. Every other byte crosses
unchanged and in order. It must never bind anything but 127.0.0.1, never
touch a frame the test did not mark, and never outlive close().
"""

import socket
import struct
import threading

# Test clients mark a request by putting this in the top 16 bits of its
# correlation id; epochgate forwards correlation ids unchanged.
MARK = 0x0BAD0000
MARK_MASK = 0xFFFF0000


def marked(correlation_id):
    return (correlation_id & MARK_MASK) == MARK


def mark(n):
    return MARK | (n & 0xFFFF)


class FaultRelay:
    """Listens on 127.0.0.1:0 and relays to `upstream` (host, port).

    `fault` is one of:
      "cut"           send half of the marked response, then close both sides
      "stall"         send half of the marked response, then relay nothing more
                      on that connection, keeping it open until close()
      "huge_size"     size prefix 0x7FFFFFF0 instead of the real one
      "negative_size" size prefix -16
      "garbage_body"  keep size and correlation id, fill the body with 0xFF
      None            relay everything unchanged
    """

    def __init__(self, upstream, fault=None):
        self.upstream = upstream
        self.fault = fault
        self.faults_applied = 0
        self.connections = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets = [self.listener]
        self._stopped = False
        self._closed = threading.Event()
        threading.Thread(target=self._accept_loop, daemon=True).start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def _accept_loop(self):
        while not self._stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.upstream, timeout=5)
                up.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self.connections += 1
                self._sockets += [client, up]
            marks = set()
            threading.Thread(target=self._requests, args=(client, up, marks), daemon=True).start()
            threading.Thread(target=self._responses, args=(up, client, marks), daemon=True).start()

    @staticmethod
    def _shutdown(*socks):
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _requests(self, src, dst, marks):
        """Client -> broker: forwarded as read; notes marked correlation ids."""
        buf = b""
        try:
            while True:
                chunk = src.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 12:
                    (size,) = struct.unpack_from(">i", buf, 0)
                    if size < 8 or len(buf) < 4 + size:
                        break
                    (corr,) = struct.unpack_from(">i", buf, 8)
                    if marked(corr & 0xFFFFFFFF):
                        marks.add(corr)
                    buf = buf[4 + size:]
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            self._shutdown(src, dst)

    def _responses(self, src, dst, marks):
        """Broker -> client, one whole frame at a time; marked ones misbehave."""
        buf = b""
        try:
            while True:
                chunk = src.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 8:
                    (size,) = struct.unpack_from(">i", buf, 0)
                    if len(buf) < 4 + size:
                        break
                    frame, buf = buf[:4 + size], buf[4 + size:]
                    (corr,) = struct.unpack_from(">i", frame, 4)
                    if self.fault is None or corr not in marks:
                        dst.sendall(frame)
                        continue
                    with self._lock:
                        self.faults_applied += 1
                    if self.fault == "cut":
                        dst.sendall(frame[:len(frame) // 2])
                        self._shutdown(src, dst)
                        return
                    if self.fault == "stall":
                        dst.sendall(frame[:len(frame) // 2])
                        self._closed.wait()
                        return
                    if self.fault == "huge_size":
                        dst.sendall(struct.pack(">I", 0x7FFFFFF0) + frame[4:])
                    elif self.fault == "negative_size":
                        dst.sendall(struct.pack(">i", -16) + frame[4:])
                    elif self.fault == "garbage_body":
                        dst.sendall(frame[:8] + b"\xff" * (len(frame) - 8))
                    else:
                        raise ValueError("unknown fault %r" % self.fault)
        except OSError:
            pass
        finally:
            self._shutdown(src, dst)

    def close(self):
        self._stopped = True
        self._closed.set()
        with self._lock:
            socks = list(self._sockets)
        for s in socks:
            self._shutdown(s)
            try:
                s.close()
            except OSError:
                pass

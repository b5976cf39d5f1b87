"""A bystander client in its own process (so the test's own threads cannot
delay it): connects to HOST:PORT, sends ApiVersions v0 round trips one after
another, 2 ms apart, until SECONDS have passed or stdin closes, and prints one
line per round trip: "<CLOCK_MONOTONIC start> <round trip seconds>". Exits 1
if a round trip fails or takes longer than 30 s.

  python3 rtt_probe.py HOST PORT SECONDS
Must never run without a deadline or connect anywhere but the given address.
"""

import select
import sys
import time


from epochgate_testlib import kafka_wire as kw  # noqa: E402


def main():
    host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    conn = kw.Connection(host, port, timeout=30)
    deadline = time.monotonic() + seconds
    corr = 1
    print("ready", flush=True)
    while time.monotonic() < deadline:
        if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.readline():
            break  # stdin closed: the test is done
        corr += 1
        t0 = time.monotonic()
        conn.send(kw.api_versions_request(corr, 0))
        got, error, _ = kw.parse_api_versions_response(conn.recv_frame(timeout=30), 0)
        rtt = time.monotonic() - t0
        if got != corr or error != 0:
            print("bad answer corr=%d error=%d" % (got, error), flush=True)
            return 1
        print("%.6f %.6f" % (t0, rtt), flush=True)
        time.sleep(0.002)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Checks of the leader-move ops from the --out files (one line per record:
"<partition> <offset> <value-index> <ms-since-start>"): nothing lost,
nothing duplicated, nothing reordered within a partition. Pure functions
of the files; they decide nothing about which client ran."""


def read_out(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    rows.append((int(parts[0]), int(parts[1]), int(parts[2]),
                                 float(parts[3]) if len(parts) > 3 else 0.0))
    except OSError:
        pass
    return rows


def check(rows, expected):
    """{lost, duplicates, reordered, redelivered}: indices 0..expected-1
    missing, indices seen at more than one (partition, offset), partitions
    whose offsets or indices do not increase in the order the rows were
    written, and rows that repeat a record already delivered at the same
    partition and offset with the same index.

    A repeat is a group consumer reading again from its last committed
    offset after a rebalance whose commit failed (REBALANCE_IN_PROGRESS or
    ILLEGAL_GENERATION): Kafka's at-least-once delivery, which the client
    does on any path and a proxy cannot cause (the client chose the offset;
    a wrong record there would not repeat the index). It is counted, not
    failed; anything else out of line is."""
    at = {}        # (partition, offset) -> index first delivered there
    where = {}     # index -> set of (partition, offset)
    last = {}
    reordered = set()
    redelivered = 0
    for p, off, i, _ in rows:
        if at.get((p, off)) == i:
            redelivered += 1
            continue
        at.setdefault((p, off), i)
        where.setdefault(i, set()).add((p, off))
        prev = last.get(p)
        if prev is not None and (off <= prev[0] or i <= prev[1]):
            reordered.add(p)
        last[p] = (off, i)
    lost = sorted(set(range(expected)) - set(where))
    dups = sorted(i for i, places in where.items() if len(places) > 1)
    return {"lost": len(lost), "duplicates": len(dups), "reordered": len(reordered),
            "redelivered": redelivered, "lost_sample": lost[:5], "duplicate_sample": dups[:5]}


def check_topic(acked_rows, topic_rows, expected):
    """produce-move: every acked index is in the topic once, and each
    partition holds its indices in produce order (sorted by offset)."""
    acked = {i for _, _, i, _ in acked_rows}
    by_offset = sorted(topic_rows, key=lambda r: (r[0], r[1]))
    result = check(by_offset, 0)
    result["lost"] = len(acked - {i for _, _, i, _ in topic_rows})
    result["unacked"] = expected - len(acked)
    return result


def clean(v):
    return v is not None and v["lost"] == 0 and v["duplicates"] == 0 and v["reordered"] == 0 \
        and v.get("unacked", 0) == 0

#!/usr/bin/python3
"""tests/metrics/check_metrics.py: parses a Prometheus text exposition with
prometheus_client's own parser (Debian python3-prometheus-client) and checks
expectations given on the command line. Run with /usr/bin/python3.

  check_metrics.py FILE [family:NAME[:TYPE]]... [sample:NAME{k=v,...}=VALUE]...

Exit 0 when the text parses and every expectation holds; 1 otherwise, with
one line per failure on stderr.
"""
import sys

from prometheus_client.parser import text_string_to_metric_families


def parse_sample_spec(spec):
    name_labels, value = spec.rsplit("=", 1)
    labels = {}
    if "{" in name_labels:
        name, rest = name_labels.split("{", 1)
        rest = rest.rstrip("}")
        for part in filter(None, rest.split(",")):
            k, v = part.split("=", 1)
            labels[k] = v
    else:
        name = name_labels
    return name, labels, float(value)


def main():
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and friends
        print(f"parse error: {e}", file=sys.stderr)
        return 1
    by_name = {f.name: f for f in families}
    failures = []
    for spec in sys.argv[2:]:
        kind, _, rest = spec.partition(":")
        if kind == "family":
            name, _, mtype = rest.partition(":")
            fam = by_name.get(name)
            if fam is None:
                failures.append(f"missing family {name}")
            elif mtype and fam.type != mtype:
                failures.append(f"family {name} has type {fam.type}, want {mtype}")
        elif kind == "sample":
            name, labels, want = parse_sample_spec(rest)
            found = [s for f in families for s in f.samples
                     if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
            if not found:
                failures.append(f"missing sample {rest}")
            elif found[0].value != want:
                failures.append(f"sample {rest}: got {found[0].value}")
        else:
            failures.append(f"bad expectation {spec}")
    for line in failures:
        print(line, file=sys.stderr)
    print(f"{len(families)} families parsed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

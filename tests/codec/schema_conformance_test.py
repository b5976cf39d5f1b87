#!/usr/bin/env python3
"""tests/codec/schema_conformance_test.py: checks codec/schema/ against Apache
Kafka's official JSON definitions (message/ for 4.x, message-pre4.0/ for the
older line) when that folder is present, and proves the checker catches drift.

For every message and every version we support, every field present at that
version must match the official definition: name and position, type (struct
types resolved, commonStructs included), presence (versions), nullability
(nullable versions), tagged-ness (tagged versions) and tag, and default. The
message's API key, valid and flexible versions and the api_keys.schema table
must match too. A version defined by both official folders is compared with
both; where they disagree, only a version that pre-4.0 marked unstable
(latestVersionUnstable: changed before release) is accepted, and then it is
compared with message/ only, and the test prints why.

Usage: schema_conformance_test.py --schema codec/schema --kafka ../shared/kafka-protocol
Exit 0 pass, 1 drift, 77 skipped (the Kafka folder is absent; with CI=true
in the environment an absent folder is a failure, exit 1). Stdlib only.
Must never: copy anything from the Kafka folder into the repository.
"""

import argparse
import copy
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
from epochgate_testlib import load_tool

ours = load_tool("codec/generator/schema.py")

SKIP = 77


# ---- loading Kafka's JSON ------------------------------------------------

def strip_comments(text):
    """Removes // comments outside string literals (Kafka's JSON has them)."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def load_folder(path):
    """name -> parsed JSON for every *.json file in a Kafka message folder."""
    out = {}
    for f in sorted(os.listdir(path)):
        if f.endswith(".json"):
            with open(os.path.join(path, f), encoding="utf-8") as fh:
                m = json.loads(strip_comments(fh.read()))
            out[m["name"]] = m
    return out


def vs(text):
    return ours.VersionSet.parse(text) if text is not None else ours.VersionSet([])


def norm_default(d):
    if d is None:
        return None
    return str(d)


# ---- flattening a definition at one version --------------------------------

def flatten_official(msg, v, where):
    """[(path, attrs)] in wire order for the official message `msg` at version v."""
    commons = {c["name"]: c for c in msg.get("commonStructs", [])}
    out = []

    def walk(fields, prefix):
        for f in fields:
            if not vs(f["versions"]).contains(v):
                continue
            path = prefix + (f["name"],)
            t = f["type"]
            elem = t[2:] if t.startswith("[]") else t
            sub = f.get("fields")
            if sub is None and elem in commons:
                sub = commons[elem]["fields"]
            if "flexibleVersions" in f:
                raise AssertionError(f"{where}: field-level flexibleVersions on {'.'.join(path)} "
                                     "is not supported by the generator")
            out.append((path, {
                "type": t,
                "nullable": vs(f.get("nullableVersions")).contains(v),
                "tagged": vs(f.get("taggedVersions")).contains(v),
                "tag": f.get("tag") if vs(f.get("taggedVersions")).contains(v) else None,
                "default": norm_default(f.get("default")),
            }))
            if sub:
                walk(sub, path)
    walk(msg["fields"], ())
    return out


def flatten_ours(msg, v):
    out = []

    def walk(fields, prefix):
        for f in fields:
            if not f.versions.contains(v):
                continue
            path = prefix + (f.name,)
            out.append((path, {
                "type": f.type,
                "nullable": f.nullable.contains(v),
                "tagged": f.tagged.contains(v),
                "tag": f.tag if f.tagged.contains(v) else None,
                "default": f.default,
            }))
            walk(f.fields, path)
    walk(msg.fields, ())
    return out


def diff_fields(name, v, mine, theirs, source, mine_label="our schema"):
    """Errors naming message, version and field where `mine` != `theirs`."""
    errs = []
    dm, dt = dict(mine), dict(theirs)
    for path, a in theirs:
        field = ".".join(path)
        if path not in dm:
            errs.append(f"{name} v{v} field {field}: missing from {mine_label} ({source})")
            continue
        b = dm[path]
        for k in ("type", "nullable", "tagged", "tag", "default"):
            if a[k] != b[k]:
                errs.append(f"{name} v{v} field {field}: {k} is {b[k]!r} in {mine_label}, "
                            f"{a[k]!r} in {source}")
    for path, _ in mine:
        if path not in dt:
            errs.append(f"{name} v{v} field {'.'.join(path)}: not in {source} at this version")
    # Wire order of the fields both define (tagged fields go by tag, not order).
    order_m = [p for p, a in mine if p in dt and not a["tagged"]]
    order_t = [p for p, a in theirs if p in dm and not a["tagged"]]
    if order_m != order_t:
        for pm, pt in zip(order_m, order_t):
            if pm != pt:
                errs.append(f"{name} v{v} field {'.'.join(pm)}: out of order, {source} has "
                            f"{'.'.join(pt)} here")
                break
    return errs


# ---- the checker -----------------------------------------------------------

def check(messages, api_keys, new, old, log=print):
    """Compares our parsed schema with the two official folders (dicts from
    load_folder). Returns a list of drift errors; logs notes."""
    errs = []
    for m in messages:
        n, o = new.get(m.name), old.get(m.name)
        if n is None and o is None:
            errs.append(f"{m.name}: no official definition")
            continue
        nv = vs(n["validVersions"]) if n else ours.VersionSet([])
        ov = vs(o["validVersions"]) if o else ours.VersionSet([])
        union = [v for v in range(0, 100) if nv.contains(v) or ov.contains(v)]
        if (m.min_version, m.max_version) != (union[0], union[-1]) or \
                union != list(range(union[0], union[-1] + 1)):
            errs.append(f"{m.name}: valid versions {m.min_version}-{m.max_version}, official "
                        f"union {union}")
        for src in (n, o):
            if src and src["apiKey"] != m.api_key:
                errs.append(f"{m.name}: api key {m.api_key}, official {src['apiKey']}")
            if src and src["type"] != m.kind:
                errs.append(f"{m.name}: kind {m.kind}, official {src['type']}")
        for v in range(m.min_version, m.max_version + 1):
            sources = []
            if n and nv.contains(v):
                sources.append(("message/", n))
            if o and ov.contains(v):
                sources.append(("message-pre4.0/", o))
            if not sources:
                errs.append(f"{m.name} v{v}: no official definition of this version")
                continue
            if len(sources) == 2:
                fa = flatten_official(n, v, m.name)
                fb = flatten_official(o, v, m.name)
                flex_a = vs(n.get("flexibleVersions")).contains(v)
                flex_b = vs(o.get("flexibleVersions")).contains(v)
                if fa != fb or flex_a != flex_b:
                    # latestVersionUnstable sits on the request file; it covers both.
                    sibling = old.get(m.name.replace("Response", "Request"), {})
                    unstable = (o.get("latestVersionUnstable") or
                                sibling.get("latestVersionUnstable")) and v == max(
                        x for x in range(100) if ov.contains(x))
                    detail = "; ".join(diff_fields(m.name, v, fb, fa, "message/",
                                                   "message-pre4.0/")) or "flexible versions"
                    if not unstable:
                        errs.append(f"{m.name} v{v}: the official folders disagree and pre-4.0 "
                                    f"did not mark v{v} unstable ({detail})")
                    else:
                        log(f"note: {m.name} v{v} is compared with message/ only: pre-4.0 marked "
                            f"v{v} latestVersionUnstable and it changed before release "
                            f"(pre-4.0 vs message/: {detail})")
                    sources = sources[:1]
            for label, src in sources:
                if m.flexible.contains(v) != vs(src.get("flexibleVersions")).contains(v):
                    errs.append(f"{m.name} v{v}: flexible is {m.flexible.contains(v)} in our "
                                f"schema, not in {label}")
                errs += diff_fields(m.name, v, flatten_ours(m, v),
                                    flatten_official(src, v, m.name), label)
    if api_keys is not None:
        errs += check_api_keys(api_keys, new, old)
    return errs


def check_api_keys(api_keys, new, old):
    errs = []
    official = {}
    for label, folder in (("message-pre4.0/", old), ("message/", new)):
        for m in folder.values():
            if m.get("type") != "request" or "apiKey" not in m:
                continue
            e = official.setdefault(m["apiKey"], {"valid": set(), "flex": set()})
            e["name"] = m["name"][:-len("Request")]  # message/ wins: it is loaded last
            valid = vs(m["validVersions"])
            flex = vs(m.get("flexibleVersions"))
            for v in range(100):
                if valid.contains(v):
                    e["valid"].add(v)
                    if flex.contains(v):
                        e["flex"].add(v)
    mine = {k.key: k for k in api_keys}
    for key in sorted(set(official) | set(mine)):
        o, k = official.get(key), mine.get(key)
        if o is None:
            errs.append(f"api key {key}: in api_keys.schema, not in the official folders")
            continue
        if k is None:
            errs.append(f"api key {key} ({o['name']}): missing from api_keys.schema")
            continue
        valid = sorted(o["valid"])
        lo, hi = (valid[0], valid[-1]) if valid else (None, None)
        ff = min(o["flex"]) if o["flex"] else None
        if k.name != o["name"]:
            errs.append(f"api key {key}: name {k.name}, official {o['name']}")
        if (k.min_version, k.max_version) != (lo, hi):
            errs.append(f"api key {key} ({k.name}): valid {k.min_version}-{k.max_version}, "
                        f"official {lo}-{hi}")
        if k.first_flexible != ff:
            errs.append(f"api key {key} ({k.name}): first flexible {k.first_flexible}, "
                        f"official {ff}")
    return errs


# ---- tests ---------------------------------------------------------------------

ARGS = None


def kafka_present():
    d = ARGS.kafka
    return os.path.isdir(os.path.join(d, "message")) and \
        os.path.isdir(os.path.join(d, "message-pre4.0"))


class OfficialConformance(unittest.TestCase):
    """Our schema against both official folders (skipped without them)."""

    @classmethod
    def setUpClass(cls):
        if not kafka_present():
            raise unittest.SkipTest(f"Kafka protocol folder not found at {ARGS.kafka}")
        cls.msgs, cls.keys, _ = ours.load_schema_dir(ARGS.schema)
        cls.new = load_folder(os.path.join(ARGS.kafka, "message"))
        cls.old = load_folder(os.path.join(ARGS.kafka, "message-pre4.0"))

    def test_schema_matches_official_definitions(self):
        errs = check(self.msgs, self.keys, self.new, self.old)
        self.assertEqual(errs, [], "\n" + "\n".join(errs))

    def test_covers_the_fifteen_apis(self):
        names = {m.name for m in self.msgs}
        for api in ("ApiVersions", "Metadata", "Produce", "Fetch", "ListOffsets",
                    "OffsetForLeaderEpoch", "FindCoordinator", "DescribeCluster", "ShareFetch",
                    "ShareAcknowledge", "InitializeShareGroupState", "ReadShareGroupState",
                    "WriteShareGroupState", "DeleteShareGroupState",
                    "ReadShareGroupStateSummary"):
            self.assertIn(api + "Request", names)
            self.assertIn(api + "Response", names)

    def _mutated(self, mutate):
        msgs = copy.deepcopy(self.msgs)
        mutate({m.name: m for m in msgs})
        return check(msgs, self.keys, self.new, self.old, log=lambda *_: None)

    def test_catches_nullable_drift(self):
        def m(d):
            f = d["ProduceRequest"].fields[0]
            self.assertEqual(f.name, "TransactionalId")
            f.nullable = ours.VersionSet.parse("5+")
        errs = self._mutated(m)
        self.assertTrue(any("ProduceRequest v3 field TransactionalId: nullable" in e
                            for e in errs), errs)

    def test_catches_tag_drift(self):
        def m(d):
            part = d["FetchResponse"].fields[3].fields[2]  # Responses.Partitions
            cur = next(f for f in part.fields if f.name == "CurrentLeader")
            cur.tag = 7
        errs = self._mutated(m)
        self.assertTrue(any("FetchResponse v12 field Responses.Partitions.CurrentLeader: tag"
                            in e for e in errs), errs)

    def test_catches_version_and_type_drift(self):
        def m(d):
            topics = d["MetadataResponse"].fields[4]
            self.assertEqual(topics.name, "Topics")
            parts = next(f for f in topics.fields if f.name == "Partitions")
            epoch = next(f for f in parts.fields if f.name == "LeaderEpoch")
            epoch.versions = ours.VersionSet.parse("8+")
            idx = next(f for f in parts.fields if f.name == "PartitionIndex")
            idx.type = "int16"
        errs = self._mutated(m)
        self.assertTrue(any("MetadataResponse v7 field Topics.Partitions.LeaderEpoch: missing"
                            in e for e in errs), errs)
        self.assertTrue(any("MetadataResponse v0 field Topics.Partitions.PartitionIndex: type"
                            in e for e in errs), errs)

    def test_catches_renamed_reordered_and_tagged_drift(self):
        def m(d):
            req = d["FetchRequest"]
            req.fields[3], req.fields[4] = req.fields[4], req.fields[3]  # MaxWaitMs <-> MinBytes
            cid = req.fields[0]
            cid.tagged = ours.VersionSet.parse("13+")
            d["ApiVersionsRequest"].fields[0].name = "ClientSoftwareNam"
        errs = self._mutated(m)
        self.assertTrue(any("FetchRequest v0 field MinBytes: out of order" in e for e in errs),
                        errs)
        self.assertTrue(any("FetchRequest v12 field ClusterId: tagged" in e for e in errs), errs)
        self.assertTrue(any("ApiVersionsRequest v3 field ClientSoftwareName: missing" in e
                            for e in errs), errs)

    def test_catches_api_key_table_drift(self):
        keys = copy.deepcopy(self.keys)
        keys[1].first_flexible = 11
        keys[40].max_version = 9
        errs = check(self.msgs, keys, self.new, self.old, log=lambda *_: None)
        self.assertTrue(any("api key 1 (Fetch): first flexible 11" in e for e in errs), errs)
        self.assertTrue(any("api key 40 " in e for e in errs), errs)


class CheckerSelfTest(unittest.TestCase):
    """The checker on a small made-up definition, so drift detection is proven
    even where the official folder is absent."""

    OFFICIAL = {
        "apiKey": 900, "type": "request", "name": "ToyRequest",
        "validVersions": "0-3", "flexibleVersions": "2+",
        "commonStructs": [{"name": "Point", "versions": "0+", "fields": [
            {"name": "X", "type": "int32", "versions": "0+"},
            {"name": "Y", "type": "int32", "versions": "1+", "default": "-1"}]}],
        "fields": [
            {"name": "Label", "type": "string", "versions": "0+", "nullableVersions": "1+"},
            {"name": "Points", "type": "[]Point", "versions": "0+"},
            {"name": "Hint", "type": "int64", "versions": "2+", "taggedVersions": "2+",
             "tag": 0}]}
    SCHEMA = """message ToyRequest api 900 request valid 0-3 flexible 2+
  Label string versions 0+ nullable 1+
  Points []Point versions 0+
    X int32 versions 0+
    Y int32 versions 1+ default -1
  Hint int64 versions 2+ tagged 2+ tag 0
"""

    def run_check(self, text):
        msgs = ours.parse_message_file("toy.schema", text)
        return check(msgs, None, {"ToyRequest": self.OFFICIAL}, {}, log=lambda *_: None)

    def test_matching_schema_passes(self):
        self.assertEqual(self.run_check(self.SCHEMA), [])

    def test_each_kind_of_drift_is_named(self):
        cases = {
            "Label string versions 0+ nullable 2+": "ToyRequest v1 field Label: nullable",
            "Y int32 versions 2+ default -1": "ToyRequest v1 field Points.Y: missing",
            "Y int64 versions 1+ default -1": "ToyRequest v1 field Points.Y: type",
            "Y int32 versions 1+ default 0": "ToyRequest v1 field Points.Y: default",
            "Hint int64 versions 2+ tagged 2+ tag 1": "ToyRequest v2 field Hint: tag",
            "Hint int64 versions 2+": "ToyRequest v2 field Hint: tagged",
        }
        for line, expect in cases.items():
            key = line.split()[0]
            src = "\n".join(l[:len(l) - len(l.lstrip())] + line
                            if l.strip().startswith(key + " ") else l
                            for l in self.SCHEMA.splitlines()) + "\n"
            errs = self.run_check(src)
            self.assertTrue(any(expect in e for e in errs), f"{line}: {errs}")

    def test_extra_field_is_named(self):
        errs = self.run_check(self.SCHEMA + "  Extra int8 versions 3+\n")
        self.assertTrue(any("ToyRequest v3 field Extra: not in message/" in e for e in errs),
                        errs)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema", default=os.path.join(HERE, "..", "..", "codec", "schema"))
    ap.add_argument("--kafka", default=os.path.join(HERE, "..", "..", "..", "shared",
                                                     "kafka-protocol"))
    ARGS, rest = ap.parse_known_args()
    if kafka_present():
        msgs, keys, _ = ours.load_schema_dir(ARGS.schema)
        new = load_folder(os.path.join(ARGS.kafka, "message"))
        old = load_folder(os.path.join(ARGS.kafka, "message-pre4.0"))
        n_versions = sum(m.max_version - m.min_version + 1 for m in msgs)
        print(f"checking {len(msgs)} messages, {n_versions} message versions and "
              f"{len(keys)} API keys against {os.path.abspath(ARGS.kafka)}")
        check(msgs, keys, new, old)  # prints the notes once
    else:
        print(f"SKIP: official conformance (no Kafka protocol folder at {ARGS.kafka}); "
              "only the checker self-test runs")
    result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    if not kafka_present():
        if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
            print(f"FAIL: CI=true and no Kafka protocol folder at {ARGS.kafka}: the only check "
                  "of our schema against Apache Kafka's definitions did not run")
            sys.exit(1)
        if os.environ.get("EPOCHGATE_SKIP_LOG"):
            with open(os.environ["EPOCHGATE_SKIP_LOG"], "a") as f:
                f.write(f"SKIP codec_schema_conformance: no Kafka protocol folder at {ARGS.kafka}\n")
        sys.exit(SKIP)


if __name__ == "__main__":
    main()

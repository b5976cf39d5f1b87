"""codec/generator/schema.py: parser for epochgate's own wire-schema format
(codec/schema/*.schema, described in codec/schema/README.md).

Owns: turning schema text into Message/Field/ApiKey objects and version sets.
Must never: read Kafka's JSON (that is the conformance test's job) or emit C++.
Python 3 standard library only.
"""

import os
import re
import shlex

PRIMITIVES = {
    "bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64",
    "string", "bytes", "records", "uuid",
}


# What a field's value names, as Kafka's JSON marks some fields with
# entityType (brokerId, topicName); the rest are epochgate's own marks for the
# facts the proxy and the policy act on (codec/schema/README.md).
ENTITIES = {
    "brokerId", "host", "port", "rack",        # a broker and its address
    "topicName", "topicId", "partition",       # where a partition entry sits
    "currentLeaderEpoch",                      # request epoch a broker checks; writable
    "leaderEpoch",                             # request epoch a broker checks; never written
    "errorCode", "acknowledgeErrorCode",       # per-partition and top-level errors
    "acknowledgements",                        # share acknowledgement batches of a partition
    "currentLeader", "nodeEndpoints",          # KIP-951 leader hint and its endpoints
    "throttle", "acks", "replicaId", "sessionEpoch",
    "shareSessionEpoch",                       # KIP-932: the broker must see every epoch
    "rackId",                                  # KIP-392: any replica may serve the fetch
}

# Row attributes of api_keys.schema: facts epochgate declares per API.
RULES = {"leader", "fetch", "epoch", "persister"}
GROUPS = {"produce", "fetch", "list_offsets", "offset_for_leader_epoch", "share", "persister"}


class SchemaError(Exception):
    """A schema file is malformed; the message names file and line."""


class VersionSet:
    """A set of API versions written as Kafka does: "3+", "0-12", "5", "none",
    or a comma-joined list of those ("0-2,5+"). Open ranges ("3+") have no
    upper bound."""

    def __init__(self, ranges):
        self.ranges = list(ranges)  # [(lo, hi or None)]

    @staticmethod
    def parse(text):
        text = text.strip()
        if text == "none":
            return VersionSet([])
        ranges = []
        for part in text.split(","):
            part = part.strip()
            if re.fullmatch(r"\d+\+", part):
                ranges.append((int(part[:-1]), None))
            elif re.fullmatch(r"\d+-\d+", part):
                lo, hi = part.split("-")
                if int(lo) > int(hi):
                    raise ValueError("empty version range " + part)
                ranges.append((int(lo), int(hi)))
            elif re.fullmatch(r"\d+", part):
                ranges.append((int(part), int(part)))
            else:
                raise ValueError("bad version set " + repr(text))
        return VersionSet(ranges)

    def contains(self, v):
        return any(lo <= v and (hi is None or v <= hi) for lo, hi in self.ranges)

    def within(self, lo, hi):
        """The versions of this set inside [lo, hi], as a sorted list."""
        return [v for v in range(lo, hi + 1) if self.contains(v)]

    def empty(self):
        return not self.ranges

    def __str__(self):
        if not self.ranges:
            return "none"
        return ",".join(f"{lo}+" if hi is None else (f"{lo}" if lo == hi else f"{lo}-{hi}")
                        for lo, hi in self.ranges)


class Field:
    """One field of a message or struct. `type` is the schema type text
    ("int32", "string", "[]int32", "[]TopicData", "LeaderIdAndEpoch")."""

    def __init__(self, name, type_, versions, line):
        self.name = name
        self.type = type_
        self.versions = versions
        self.nullable = VersionSet([])
        self.tagged = VersionSet([])
        self.tag = None
        self.default = None
        self.entity = None    # what the value names (ENTITIES), or None
        self.on_error = None  # value a broker writes for a partition it refuses
        self.fields = []
        self.line = line

    @property
    def is_array(self):
        return self.type.startswith("[]")

    @property
    def elem_type(self):
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self):
        return self.elem_type not in PRIMITIVES

    @property
    def is_tagged(self):
        return self.tag is not None


class Message:
    """A request or response body of one API."""

    def __init__(self, name, api_key, kind, lo, hi, flexible, line, path):
        self.name = name
        self.api_key = api_key
        self.kind = kind
        self.min_version = lo
        self.max_version = hi
        self.flexible = flexible
        self.fields = []
        self.line = line
        self.path = path

    def versions(self):
        return range(self.min_version, self.max_version + 1)


class ApiKey:
    def __init__(self, key, name, lo, hi, first_flexible):
        self.key = key
        self.name = name
        self.min_version = lo  # None when the key has no valid version
        self.max_version = hi
        self.first_flexible = first_flexible  # None when never flexible
        # epochgate's row: versions the policy decides and learns from, its
        # rule and mode group (codec/schema/README.md).
        self.decide = VersionSet([])
        self.learn = VersionSet([])
        self.rule = None
        self.group = None


def _fail(path, lineno, msg):
    raise SchemaError(f"{path}:{lineno}: {msg}")


def parse_message_file(path, text=None):
    """Parses one *.schema file into a list of Message."""
    if text is None:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    messages = []
    stack = []  # [(indent, container_with_fields)]
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if "\t" in line[:indent + 1]:
            _fail(path, lineno, "indent with spaces, not tabs")
        try:
            tok = shlex.split(line)
        except ValueError as e:
            _fail(path, lineno, str(e))
        if indent == 0:
            # message <Name> api <key> <request|response> valid <lo>-<hi> flexible <set>
            if len(tok) != 9 or tok[0] != "message" or tok[2] != "api" or tok[5] != "valid" \
                    or tok[7] != "flexible" or tok[4] not in ("request", "response"):
                _fail(path, lineno, "expected: message NAME api KEY request|response valid LO-HI flexible SET")
            m = re.fullmatch(r"(\d+)-(\d+)", tok[6])
            if not m:
                _fail(path, lineno, "valid must be LO-HI")
            msg = Message(tok[1], int(tok[3]), tok[4], int(m.group(1)), int(m.group(2)),
                          VersionSet.parse(tok[8]), lineno, path)
            messages.append(msg)
            stack = [(0, msg)]
            continue
        if not stack:
            _fail(path, lineno, "field outside a message")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack:
            _fail(path, lineno, "bad indentation")
        parent = stack[-1][1]
        if len(tok) < 4 or tok[2] != "versions":
            _fail(path, lineno, "expected: NAME TYPE versions SET [nullable SET] [tagged SET tag N] [default V]")
        f = Field(tok[0], tok[1], VersionSet.parse(tok[3]), lineno)
        i = 4
        while i < len(tok):
            key = tok[i]
            if i + 1 >= len(tok):
                _fail(path, lineno, f"{key} needs a value")
            val = tok[i + 1]
            if key == "nullable":
                f.nullable = VersionSet.parse(val)
            elif key == "tagged":
                f.tagged = VersionSet.parse(val)
            elif key == "tag":
                f.tag = int(val)
            elif key == "default":
                f.default = val
            elif key == "entity":
                if val not in ENTITIES:
                    _fail(path, lineno, f"unknown entity {val!r} (one of {', '.join(sorted(ENTITIES))})")
                f.entity = val
            elif key == "onError":
                f.on_error = val
            else:
                _fail(path, lineno, f"unknown attribute {key!r}")
            i += 2
        if (f.tag is None) != f.tagged.empty():
            _fail(path, lineno, "tagged and tag go together")
        if isinstance(parent, Field) and not parent.is_struct:
            _fail(path, lineno, f"{parent.name} is not a struct")
        parent.fields.append(f)
        stack.append((indent, f))
    for msg in messages:
        _check(msg, msg.fields, path)
    return messages


def _check(msg, fields, path):
    for f in fields:
        if f.is_struct and not f.fields:
            _fail(path, f.line, f"struct {f.elem_type} has no fields")
        if not f.is_struct and f.fields:
            _fail(path, f.line, f"{f.type} cannot have fields")
        if f.is_struct and not f.is_array and not f.nullable.empty():
            _fail(path, f.line, "nullable struct fields are not supported")
        for v in msg.versions():
            if f.tagged.contains(v) and not msg.flexible.contains(v):
                _fail(path, f.line, f"tagged in non-flexible version {v}")
            # The C++ type of a tagged field is optional<T> in every version, so
            # a field cannot be tagged in some versions and regular in others.
            if f.is_tagged and f.versions.contains(v) != f.tagged.contains(v):
                _fail(path, f.line, f"tagged versions must equal versions (v{v})")
        _check(msg, f.fields, path)


def parse_api_keys(path):
    """Parses api_keys.schema: `api KEY NAME valid LO-HI|none flexible N+|none`."""
    keys = []
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            tok = line.split()
            if len(tok) < 7 or len(tok) % 2 == 0 or tok[0] != "api" or tok[3] != "valid" \
                    or tok[5] != "flexible":
                _fail(path, lineno, "expected: api KEY NAME valid LO-HI|none flexible N+|none "
                                    "[decide SET] [learn SET] [rule R] [group G]")
            lo = hi = None
            if tok[4] != "none":
                m = re.fullmatch(r"(\d+)-(\d+)", tok[4])
                if not m:
                    _fail(path, lineno, "valid must be LO-HI or none")
                lo, hi = int(m.group(1)), int(m.group(2))
            ff = None
            if tok[6] != "none":
                m = re.fullmatch(r"(\d+)\+", tok[6])
                if not m:
                    _fail(path, lineno, "flexible must be N+ or none")
                ff = int(m.group(1))
            k = ApiKey(int(tok[1]), tok[2], lo, hi, ff)
            for i in range(7, len(tok), 2):
                attr, val = tok[i], tok[i + 1]
                if attr in ("decide", "learn"):
                    setattr(k, attr, VersionSet.parse(val))
                elif attr == "rule" and val in RULES:
                    k.rule = val
                elif attr == "group" and val in GROUPS:
                    k.group = val
                else:
                    _fail(path, lineno, f"bad row attribute {attr} {val}")
            if not k.decide.empty() and (k.rule is None or k.group is None):
                _fail(path, lineno, "a decided API needs a rule and a group")
            keys.append(k)
    return keys


def load_schema_dir(schema_dir):
    """Returns (messages, api_keys, message_files) for a schema folder."""
    files = sorted(f for f in os.listdir(schema_dir)
                   if f.endswith(".schema") and f != "api_keys.schema")
    messages = []
    for f in files:
        messages.extend(parse_message_file(os.path.join(schema_dir, f)))
    keys = parse_api_keys(os.path.join(schema_dir, "api_keys.schema"))
    return messages, keys, files


def snake_case(name):
    """Kafka CamelCase -> snake_case (TransactionalId -> transactional_id)."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()

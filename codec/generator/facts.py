"""codec/generator/facts.py: per-API facts and partition-shape traits, derived
from the entity marks of codec/schema/*.schema and the rows of
api_keys.schema (codec/schema/README.md).

Owns: which versions of an API carry broker addresses (and where), KIP-951
hints, what the policy decides and learns from, the metric label, and the
C++ traits that walk "topics -> partitions" of each message.
Must never: read Kafka's JSON, or name an API by hand (everything here follows
from marks and rows).
Python 3 standard library only.
"""

from schema import VersionSet, snake_case

OPEN = 0x7FFF  # C++ upper bound of an open range ("10+")


def vs_and(a, b):
    """Intersection of two VersionSets."""
    out = []
    for alo, ahi in a.ranges:
        for blo, bhi in b.ranges:
            lo = max(alo, blo)
            hi = ahi if bhi is None else (bhi if ahi is None else min(ahi, bhi))
            if hi is None or lo <= hi:
                out.append((lo, hi))
    return VersionSet(out)


def vs_or(sets):
    """Union as one contiguous range (lo, hi|None), or None when empty.
    Raises ValueError when the union has a gap."""
    ranges = sorted(r for s in sets for r in s.ranges)
    if not ranges:
        return None
    lo, hi = ranges[0]
    for a, b in ranges[1:]:
        if hi is not None and a > hi + 1:
            raise ValueError("versions with a gap")
        if hi is not None and (b is None or b > hi):
            hi = b
    return (lo, hi)


def cpp_range(r):
    if r is None:
        return "{-1, -1}"
    lo, hi = r
    return f"{{{lo}, {OPEN if hi is None else hi}}}"


def text_range(r):
    if r is None:
        return "none"
    lo, hi = r
    return f"{lo}+" if hi is None else (f"{lo}" if lo == hi else f"{lo}-{hi}")


def walk(fields, versions, path=()):
    """Yields (field, versions it is present in, path of fields to it)."""
    for f in fields:
        v = vs_and(versions, f.versions)
        yield f, v, path + (f,)
        if f.is_struct:
            yield from walk(f.fields, v, path + (f,))


def marked(msg, entity):
    all_v = VersionSet.parse("0+")
    return [(f, v, p) for f, v, p in walk(msg.fields, all_v) if f.entity == entity]


def address_facts(msg):
    """(range, where) of the broker addresses a message carries."""
    if msg is None:
        return None, ""
    hosts = marked(msg, "host")
    if not hosts:
        return None, ""
    where = []
    for f, v, p in hosts:
        holder = "".join(x.name + ("[]" if x.is_array else "") + "." for x in p[:-1])
        where.append(f"{holder}{f.name} (v{text_range(vs_or([v]))})")
    return vs_or([v for _, v, _ in hosts]), ", ".join(where)


def hint_facts(msg):
    """Versions whose response carries a KIP-951 CurrentLeader and NodeEndpoints."""
    if msg is None:
        return None
    leaders = marked(msg, "currentLeader")
    eps = marked(msg, "nodeEndpoints")
    if not leaders or not eps:
        return None
    return vs_or([vs_and(leaders[0][1], eps[0][1])])


class Shape:
    """Where topics and partitions sit in one message."""

    def __init__(self, msg, topics, parts):
        self.msg = msg
        self.topics = topics  # top-level array field
        self.parts = parts    # array field inside the topic struct

    def field(self, where, entity):
        for f in where.fields:
            if f.entity == entity:
                return f
        return None


def find_shape(msg):
    for t in msg.fields:
        if not (t.is_array and t.is_struct):
            continue
        if not any(f.entity in ("topicName", "topicId") for f in t.fields):
            continue
        for p in t.fields:
            if p.is_array and p.is_struct and any(f.entity == "partition" for f in p.fields):
                return Shape(msg, t, p)
    return None


# ---- C++ emission (cg: the generate module, for cond() and member_name()) ----

RULE_CPP = {None: "PolicyRule::kNone", "leader": "PolicyRule::kLeader", "fetch": "PolicyRule::kFetch",
            "epoch": "PolicyRule::kEpoch", "persister": "PolicyRule::kPersister"}


def _access(cg, path, msg, root="m"):
    """C++ condition and expression for the value at `path` (top-level or one
    struct deep, the struct possibly tagged) in `root`, guarded by versions."""
    conds, expr = [], root
    for i, f in enumerate(path):
        c = cg.cond(f.versions, msg)
        if c != "true":
            conds.append(f"({c})")
        expr = f"{expr}.{cg.member_name(f)}"
        if f.is_tagged and i < len(path) - 1:
            conds.append(expr)
            expr = f"(*{expr})"
    return " && ".join(conds) or "true", expr


def emit_shape(cg, s):
    msg = s.msg
    M = msg.name
    T = f"{M}::{s.topics.elem_type}"
    P = f"{M}::{s.parts.elem_type}"
    tm, pm = cg.member_name(s.topics), cg.member_name(s.parts)
    name = s.field(s.topics, "topicName")
    tid = s.field(s.topics, "topicId")
    part = s.field(s.parts, "partition")
    o = [f"template <>", f"struct PartitionShape<{M}> {{",
         "  static constexpr bool kPresent = true;",
         f"  using Message = {M};", f"  using Topic = {T};", f"  using Partition = {P};",
         f"  static std::vector<Topic>& topics(Message& m) {{ return m.{tm}; }}",
         f"  static const std::vector<Topic>& topics(const Message& m) {{ return m.{tm}; }}",
         f"  static std::vector<Partition>& partitions(Topic& t) {{ return t.{pm}; }}",
         f"  static const std::vector<Partition>& partitions(const Topic& t) {{ return t.{pm}; }}"]
    by_id = "false" if tid is None else ("true" if name is None else cg.cond(tid.versions, msg))
    o.append(f"  static bool by_id(int16_t v) {{ (void)v; return {by_id}; }}")
    if name is not None:
        n = cg.member_name(name)
        o.append(f"  static std::string_view name(const Topic& t) {{ return t.{n}; }}")
        o.append(f"  static void set_name(Topic& t, std::string_view n) {{ t.{n} = std::string(n); }}")
    else:
        o.append("  static std::string_view name(const Topic&) { return {}; }")
        o.append("  static void set_name(Topic&, std::string_view) {}")
    if tid is not None:
        n = cg.member_name(tid)
        o.append(f"  static const Uuid& id(const Topic& t) {{ return t.{n}; }}")
        o.append(f"  static void set_id(Topic& t, const Uuid& id) {{ t.{n} = id; }}")
    else:
        o.append("  static const Uuid& id(const Topic&) { static const Uuid none{}; return none; }")
        o.append("  static void set_id(Topic&, const Uuid&) {}")
    pn = cg.member_name(part)
    o.append(f"  static int32_t partition(const Partition& p) {{ return p.{pn}; }}")
    o.append(f"  static void set_partition(Partition& p, int32_t n) {{ p.{pn} = n; }}")
    if msg.kind == "request":
        o += _request_parts(cg, s)
    else:
        o += _response_parts(cg, s)
    o.append("};")
    return o


def _request_parts(cg, s):
    msg = s.msg
    o = []
    ep = s.field(s.parts, "currentLeaderEpoch") or s.field(s.parts, "leaderEpoch")
    if ep is not None:
        n = cg.member_name(ep)
        o += ["  static constexpr bool kHasEpoch = true;",
              f"  static constexpr bool kEpochWritable = {'true' if ep.entity == 'currentLeaderEpoch' else 'false'};",
              f"  static bool has_epoch(int16_t v) {{ (void)v; return {cg.cond(ep.versions, msg)}; }}",
              f"  static int32_t epoch(const Partition& p) {{ return p.{n}; }}",
              f"  static void set_epoch(Partition& p, int32_t e) {{ p.{n} = e; }}"]
    else:
        o += ["  static constexpr bool kHasEpoch = false;", "  static constexpr bool kEpochWritable = false;",
              "  static bool has_epoch(int16_t) { return false; }",
              "  static int32_t epoch(const Partition&) { return -1; }",
              "  static void set_epoch(Partition&, int32_t) {}"]
    reps = marked(msg, "replicaId")
    terms = []
    for _, _, path in reps:
        c, e = _access(cg, path, msg)
        terms.append(f"({c} && {e} >= 0)" if c != "true" else f"({e} >= 0)")
    o.append(f"  static bool from_replica(const Message& m, int16_t v) {{ (void)m; (void)v; "
             f"return {' || '.join(terms) or 'false'}; }}")
    se = marked(msg, "sessionEpoch")
    if se:
        c, e = _access(cg, se[0][2], msg)
        o.append(f"  static int32_t session_epoch(const Message& m, int16_t v) {{ (void)v; "
                 f"return {c} ? {e} : -1; }}")
    else:
        o.append("  static int32_t session_epoch(const Message&, int16_t) { return -1; }")
    rk = marked(msg, "rackId")
    o.append("  /// The version names the client's rack (KIP-392): the broker then serves a")
    o.append("  /// consumer's fetch from any replica, and checks leadership only through")
    o.append("  /// CurrentLeaderEpoch.")
    o.append(f"  static bool follower_may_serve(int16_t v) {{ (void)v; "
             f"return {_access(cg, rk[0][2], msg)[0] if rk else 'false'}; }}")
    ss = marked(msg, "shareSessionEpoch")
    o.append("  /// The request moves a broker-side share session on (KIP-932): the broker")
    o.append("  /// must see it even when every partition is answered locally.")
    o.append(f"  static constexpr bool kBrokerSession = {'true' if ss else 'false'};")
    ak = marked(msg, "acks")
    o.append("  static bool acks_zero(const Message& m) { " +
             (f"return m.{cg.member_name(ak[0][0])} == 0; }}" if ak else "(void)m; return false; }"))
    views = [f for f in s.parts.fields if f.type in ("records", "bytes")]
    o.append("  /// Drops views into the request frame (kept requests outlive it).")
    o.append("  static void drop_views(Partition& p) { " +
             (" ".join(f"p.{cg.member_name(f)} = Bytes{{}};" for f in views) or "(void)p;") + " }")
    acks = s.field(s.parts, "acknowledgements")
    o.append("  static bool has_acknowledgements(const Partition& p) { " +
             (f"return !p.{cg.member_name(acks)}.empty(); }}" if acks else "(void)p; return false; }"))
    return o


def _response_parts(cg, s):
    msg = s.msg
    o = []
    top_err = next((f for f in msg.fields if f.entity == "errorCode"), None)
    thr = next((f for f in msg.fields if f.entity == "throttle"), None)
    o.append(f"  static constexpr bool kHasTopError = {'true' if top_err else 'false'};")
    o.append("  static int16_t top_error(const Message& m) { " +
             (f"return m.{cg.member_name(top_err)}; }}" if top_err else "(void)m; return 0; }"))
    o.append(f"  static constexpr bool kHasThrottle = {'true' if thr else 'false'};")
    if thr:
        n = cg.member_name(thr)
        o.append(f"  static int32_t throttle(const Message& m) {{ return m.{n}; }}")
        o.append(f"  static void set_throttle(Message& m, int32_t t) {{ m.{n} = t; }}")
    else:
        o.append("  static int32_t throttle(const Message&) { return 0; }")
        o.append("  static void set_throttle(Message&, int32_t) {}")
    err = s.field(s.parts, "errorCode")
    en = cg.member_name(err)
    o.append(f"  static int16_t error_code(const Partition& p) {{ return p.{en}; }}")
    o.append(f"  static void set_error_code(Partition& p, int16_t e) {{ p.{en} = e; }}")
    fills = []
    for f in s.parts.fields:
        if f.on_error is not None:
            fills.append(f"p.{cg.member_name(f)} = {f.on_error};")
        if f.is_struct and not f.is_array and not f.is_tagged:
            for g in f.fields:
                if g.on_error is not None:
                    fills.append(f"p.{cg.member_name(f)}.{cg.member_name(g)} = {g.on_error};")
    o.append("  /// The values a broker writes into a partition it answers with an error.")
    o.append("  static void fill_error(Partition& p) { " + (" ".join(fills) or "(void)p;") + " }")
    ack = s.field(s.parts, "acknowledgeErrorCode")
    o.append(f"  static constexpr bool kHasAcknowledgeError = {'true' if ack else 'false'};")
    o.append("  static void set_acknowledge_error(Partition& p, int16_t e) { " +
             (f"p.{cg.member_name(ack)} = e; }}" if ack else "(void)p; (void)e; }"))
    cl = s.field(s.parts, "currentLeader")
    eps = next((f for f in msg.fields if f.entity == "nodeEndpoints"), None)
    hr = hint_facts(msg)
    if cl is not None and eps is not None and hr is not None:
        cn = cg.member_name(cl)
        lid = next(g for g in cl.fields if g.entity == "brokerId")
        lep = next(g for g in cl.fields if g.entity == "leaderEpoch")
        ln, le = cg.member_name(lid), cg.member_name(lep)
        lo, hi = hr
        hc = f"v >= {lo}" + ("" if hi is None else f" && v <= {hi}")
        o += ["  static constexpr bool kHasHints = true;",
              f"  using NodeEndpoint = {msg.name}::{eps.elem_type};",
              f"  /// KIP-951: CurrentLeader and NodeEndpoints both present in `v`.",
              f"  static bool carries_hints(int16_t v) {{ return {hc}; }}"]
        if cl.is_tagged:
            o += [f"  static bool leader_hint(const Partition& p, int32_t& id, int32_t& epoch) {{",
                  f"    if (!p.{cn}) return false;",
                  f"    id = p.{cn}->{ln};", f"    epoch = p.{cn}->{le};", "    return true;", "  }",
                  f"  static void set_leader_hint(Partition& p, int32_t id, int32_t epoch) {{",
                  f"    {msg.name}::{cl.elem_type} l{{}};", f"    l.{ln} = id;", f"    l.{le} = epoch;",
                  f"    p.{cn} = std::move(l);", "  }"]
        else:
            o += [f"  static bool leader_hint(const Partition& p, int32_t& id, int32_t& epoch) {{",
                  f"    id = p.{cn}.{ln};", f"    epoch = p.{cn}.{le};", "    return true;", "  }",
                  f"  static void set_leader_hint(Partition& p, int32_t id, int32_t epoch) {{",
                  f"    p.{cn}.{ln} = id;", f"    p.{cn}.{le} = epoch;", "  }"]
        en = cg.member_name(eps)
        if eps.is_tagged:
            o += ["  /// NodeEndpoints, or null when absent (tagged).",
                  f"  static std::vector<NodeEndpoint>* node_endpoints(Message& m) {{ "
                  f"return m.{en} ? &*m.{en} : nullptr; }}",
                  f"  static std::vector<NodeEndpoint>& make_node_endpoints(Message& m) {{ "
                  f"if (!m.{en}) m.{en}.emplace(); return *m.{en}; }}"]
        else:
            o += [f"  static std::vector<NodeEndpoint>* node_endpoints(Message& m) {{ return &m.{en}; }}",
                  f"  static std::vector<NodeEndpoint>& make_node_endpoints(Message& m) {{ "
                  f"return m.{en}; }}"]
    else:
        o += ["  static constexpr bool kHasHints = false;",
              "  static bool carries_hints(int16_t) { return false; }"]
    return o


def emit_address_walk(cg, msg):
    """visit_addresses(M&, v, f): calls f(node_id, host, port) for every broker
    address present in version v."""
    hosts = marked(msg, "host")
    o = ["template <class F>", f"void visit_addresses({msg.name}& m, int16_t v, F&& f) {{",
         "  (void)m; (void)v; (void)f;"]
    for hf, _, path in hosts:
        holder = path[:-1]
        sib = holder[-1].fields if holder else msg.fields
        nid = next(g for g in sib if g.entity == "brokerId")
        port = next(g for g in sib if g.entity == "port")
        c = cg.cond(hf.versions, msg)
        if not holder:
            o.append(f"  if ({c}) f(m.{cg.member_name(nid)}, m.{cg.member_name(hf)}, m.{cg.member_name(port)});")
            continue
        if len(holder) != 1 or not holder[0].is_array:
            raise SystemExit(f"{msg.name}: addresses deeper than one array are not supported")
        a = holder[0]
        an = cg.member_name(a)
        ac = cg.cond(a.versions, msg)
        guard = " && ".join(x for x in (ac if ac != "true" else "", f"m.{an}.has_value()" if a.is_tagged else "") if x) or "true"
        rng = f"*m.{an}" if a.is_tagged else f"m.{an}"
        o.append(f"  if ({guard})")
        o.append(f"    for (auto& x : {rng}) f(x.{cg.member_name(nid)}, x.{cg.member_name(hf)}, x.{cg.member_name(port)});")
    o.append("}")
    return o


def emit_traits(cg, msgs, keys):
    by_key = {}
    for m in msgs:
        by_key.setdefault(m.api_key, {})[m.kind] = m
    rows = {k.key: k for k in keys}
    o = [cg.BANNER.rstrip(),
         "// Compile-time facts of every decoded API, from the schema's entity marks and",
         "// the rows of api_keys.schema: the request/response pair of each key, the",
         "// partition shape of each message (where its topics and partitions sit), the",
         "// broker addresses it carries, and lists for explicit instantiation.",
         "#pragma once", "", "#include <cstdint>", "#include <optional>", "#include <string>",
         "#include <string_view>", "#include <utility>", "#include <variant>", "#include <vector>", "",
         '#include "codec/api_table.h"', '#include "codec/messages/all.h"', "",
         "namespace epochgate::codec {", "",
         "/// The request and response of API key K, with its row of api_keys.schema.",
         "template <int16_t K>", "struct Api;", ""]
    for k in sorted(by_key):
        pair = by_key[k]
        row = rows[k]
        o += [f"template <>", f"struct Api<{k}> {{",
              f"  static constexpr int16_t kKey = {k};",
              f"  using Request = {pair['request'].name};", f"  using Response = {pair['response'].name};",
              f"  static constexpr PolicyRule kRule = {RULE_CPP[row.rule]};",
              f'  static constexpr std::string_view kGroup = "{row.group or ""}";',
              f"  static constexpr bool kDecided = {'false' if row.decide.empty() else 'true'};",
              f"  static constexpr bool kLearned = {'false' if row.learn.empty() else 'true'};", "};", ""]
    o += ["/// Calls f(Api<K>{}) for a decoded API key, else returns `otherwise`.",
          "template <class R, class F>", "R with_api(int16_t key, R otherwise, F&& f) {",
          "  switch (key) {"]
    for k in sorted(by_key):
        o.append(f"    case {k}: return f(Api<{k}>{{}});")
    o += ["    default: return otherwise;", "  }", "}", ""]
    o += ["/// Where the topics and partitions of a message sit (messages with a",
          "/// topicName/topicId-marked topic array holding a partition-marked array).",
          "template <class M>", "struct PartitionShape {", "  static constexpr bool kPresent = false;",
          "};", ""]
    shapes = [(m, find_shape(m)) for m in msgs]
    for m, s in shapes:
        if s is not None:
            o += emit_shape(cg, s) + [""]
    o += ["/// Broker addresses of a response (every host-marked field), version-guarded."]
    for m in msgs:
        if m.kind == "response" and marked(m, "host"):
            o += emit_address_walk(cg, m) + [""]
    o += ["/// Responses without broker addresses: nothing to visit.",
          "template <class M, class F>", "void visit_addresses(M&, int16_t, F&&) {}", ""]
    hinted = [by_key[k]["response"].name for k in sorted(by_key) if hint_facts(by_key[k].get("response"))]
    o += ["/// Any decoded response that can carry a KIP-951 leader hint.",
          "using HintedResponse = std::variant<" + ", ".join(f"{n}*" for n in hinted) + ">;", "",
          "/// True for responses that carry KIP-951 hints in some version.",
          "template <class M>", "inline constexpr bool kCarriesHints = false;"]
    o += [f"template <>\ninline constexpr bool kCarriesHints<{n}> = true;" for n in hinted]
    addressed = [m.name for m in msgs if m.kind == "response" and marked(m, "host")]
    o += ["", "/// True for responses that carry broker addresses in some version.",
          "template <class M>", "inline constexpr bool kCarriesAddresses = false;"]
    o += [f"template <>\ninline constexpr bool kCarriesAddresses<{n}> = true;" for n in addressed]
    o += [""]
    shaped = [k for k in sorted(by_key) if rows[k].group]
    decided = [k for k in shaped if not rows[k].decide.empty()]

    def xlist(name, ks, doc):
        out = [f"/// {doc}", f"#define {name}(X) \\"]
        out += [f"  X({by_key[k]['request'].name}, {by_key[k]['response'].name}) \\" for k in ks]
        out.append("  /* end */")
        return out
    o += xlist("EPOCHGATE_FOR_EACH_GROUPED_API", shaped,
               "X(Request, Response) for every API with a policy group (decide() exists).")
    o += xlist("EPOCHGATE_FOR_EACH_DECIDED_API", decided,
               "X(Request, Response) for every API the policy decides (answers, rewrites, merges).")
    o += xlist("EPOCHGATE_FOR_EACH_HINTED_API", [k for k in decided if hint_facts(by_key[k]['response'])],
               "X(Request, Response) for decided APIs whose responses carry KIP-951 hints.")
    o += ["", "}  // namespace epochgate::codec"]
    for m, s in shapes:
        if m.api_key in {k for k in rows if not rows[k].decide.empty()} and s is None:
            raise SystemExit(f"{m.name}: a decided API needs topic and partition marks")
    return "\n".join(o) + "\n"


def table_row(cg, row, req, resp):
    """The extra ApiInfo initialisers of one key (see codec/api_table.h)."""
    addr, where = address_facts(resp)
    hints = hint_facts(resp)
    dec = vs_or([row.decide]) if not row.decide.empty() else None
    lrn = vs_or([row.learn]) if not row.learn.empty() else None
    return (f'"{snake_case(row.name)}", {cpp_range(addr)}, "{where}", {cpp_range(dec)}, '
            f'{cpp_range(lrn)}, {cpp_range(hints)}, {RULE_CPP[row.rule]}, "{row.group or ""}"')

#!/usr/bin/env python3
"""tools/config_keys.py: docs/config.md's key tables and the Helm chart's
values schema, held to the key table in config/keys.def.

The table comes from `epochgate-config-keys` (built from config/keys.def; it
prints every row and the defaults' /debug/config as JSON).

  tools/config_keys.py write-docs [--keys-bin build/config/epochgate-config-keys]
      rewrites the generated blocks of docs/config.md (between
      <!-- BEGIN keys SECTION --> and <!-- END keys SECTION -->)
  tools/config_keys.py check [--keys-bin ...]
      exits 1, naming each disagreement, when docs/config.md is not what
      write-docs would write, or when helm/epochgate/values.schema.json or
      values.yaml disagree with the table (name, type, bounds, enum, default)

Never edits the chart: the schema is hand-written and only checked.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UINT64_MAX = 18446744073709551615
BEGIN = re.compile(r"^<!-- BEGIN keys (\S*) -->$")
END = "<!-- END keys {} -->"
TOP = "(top)"


def load_table(keys_bin):
    out = subprocess.run([keys_bin], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def parent(path):
    cut = path.rfind(".")
    return "" if cut < 0 else path[:cut]


def name(path):
    return path[path.rfind(".") + 1:]


def sections(table):
    """Sections with keys, in table order of their first key."""
    seen = []
    for k in table["keys"]:
        p = parent(k["path"])
        if p not in seen:
            seen.append(p)
    return seen


def cell(text):
    return text.replace("|", "\\|")


def range_text(k):
    if "min" in k:
        lo, hi = int(k["min"]), int(k["max"])
        return f"at least {lo}" if hi == UINT64_MAX else f"{lo}..{hi}"
    if "choices" in k:
        names = [f"`{c}`" for c in k["choices"]]
        if k["default_text"] == '""' and "" not in k["choices"]:
            names.append('`""`')
        return ", ".join(names)
    return ""


def render_block(table, section):
    rows = [
        "| Key | Type | Default | Range | Applies | Description |",
        "|---|---|---|---|---|---|",
    ]
    for k in table["keys"]:
        if parent(k["path"]) != section:
            continue
        default = "see below" if k["kind"] == "section" else f"`{k['default_text']}`"
        if k["doc"].startswith("required"):
            default = "none (required)"  # the loader refuses the key's absence
        rows.append("| `{}` | {} | {} | {} | {} | {} |".format(
            name(k["path"]), cell(k["doc_type"]), cell(default), cell(range_text(k)),
            k["reload"], cell(k["doc"])))
    return rows


def render_docs(table, text):
    """text with every generated block replaced; problems for missing/unknown blocks."""
    lines = text.split("\n")
    out, problems, found = [], [], []
    known = sections(table)
    i = 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        label = m.group(1)
        section = "" if label == TOP else label
        end = END.format(label)
        try:
            j = lines.index(end, i + 1)
        except ValueError:
            problems.append(f"docs/config.md: {lines[i]} has no {end}")
            return text, problems
        out.append(lines[i])
        if section in known:
            out.extend(render_block(table, section))
        else:
            problems.append(f"docs/config.md: block for {label!r}, which config/keys.def has no keys under")
            out.extend(lines[i + 1:j])
        out.append(end)
        found.append(section)
        i = j + 1
    for s in known:
        if s not in found:
            problems.append("docs/config.md: no block <!-- BEGIN keys {} --> for its keys".format(s or TOP))
    return "\n".join(out), problems


def schema_node(schema, dotted):
    """The schema node at a chart value path ("config.policy.rules[].mode"), or None."""
    node = schema
    for part in dotted.split("."):
        items = part.endswith("[]")
        part = part[:-2] if items else part
        node = node.get("properties", {}).get(part)
        if node is None:
            return None
        if items:
            node = node.get("items")
            if node is None:
                return None
    return node


def default_value(table, path):
    node = table["defaults"]
    for part in path.split("."):
        node = node[part]
    return node


def check_schema(table, schema):
    problems = []
    where = "helm/epochgate/values.schema.json"
    by_path = {k["path"]: k for k in table["keys"]}
    for k in table["keys"]:
        chart, path = k["chart"], k["path"]
        if chart in ("chart", "none"):
            if schema_node(schema, "config." + path) is not None:
                problems.append(f"{where}: config.{path} is set by the chart ({chart}), not under config")
            continue
        at = "config." + path if chart == "config" else chart
        node = schema_node(schema, at)
        if node is None:
            problems.append(f"{where}: {at} missing (config/keys.def row {path})")
            continue
        if node.get("type") != k["schema_type"]:
            problems.append(f"{where}: {at} type {node.get('type')!r}, table {k['schema_type']!r} ({path})")
        if "min" in k and k["kind"] != "port_map":
            lo, hi = int(k["min"]), int(k["max"])
            if node.get("minimum") != lo:
                problems.append(f"{where}: {at} minimum {node.get('minimum')}, table {lo} ({path})")
            want_max = None if hi == UINT64_MAX else hi
            if node.get("maximum") != want_max:
                problems.append(f"{where}: {at} maximum {node.get('maximum')}, table {want_max} ({path})")
        if "choices" in k:
            want = set(k["choices"]) | ({""} if k["default_text"] == '""' else set())
            if set(node.get("enum", [])) != want:
                problems.append(f"{where}: {at} enum {node.get('enum')}, table {sorted(want)} ({path})")
        leaf = k["kind"] != "section" and "[]" not in path
        if chart == "config" and leaf:
            want = default_value(table, path)
            if "default" not in node:
                problems.append(f"{where}: {at} has no \"default\" (table {json.dumps(want)})")
            elif node["default"] != want or type(node["default"]) is not type(want):
                problems.append(f"{where}: {at} default {json.dumps(node['default'])}, table {json.dumps(want)}")
    # Every key the chart accepts under config must be a row.
    def walk(node, path):
        for key, child in node.get("properties", {}).items():
            p = f"{path}.{key}" if path else key
            k = by_path.get(p)
            if k is None or k["chart"] != "config":
                problems.append(f"{where}: config.{p} is not a config/keys.def row with chart \"config\"")
                continue
            walk(child, p)
            if "properties" in child.get("items", {}):
                walk(child["items"], p + "[]")
    walk(schema["properties"]["config"], "")
    return problems


def check_values(table, values):
    problems = []
    by_path = {k["path"]: k for k in table["keys"]}

    def walk(node, path):
        for key, child in (node or {}).items():
            p = f"{path}.{key}" if path else key
            k = by_path.get(p)
            if k is None or k["chart"] != "config":
                problems.append(f"helm/epochgate/values.yaml: config.{p} is not a config/keys.def row with chart \"config\"")
            elif k["kind"] == "section":
                walk(child, p)
    walk(values.get("config"), "")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["write-docs", "check"])
    ap.add_argument("--keys-bin", default=os.path.join(ROOT, "build/config/epochgate-config-keys"))
    ap.add_argument("--root", default=ROOT, help="checkout holding docs/ and helm/")
    args = ap.parse_args()
    table = load_table(args.keys_bin)
    docs_path = os.path.join(args.root, "docs/config.md")
    with open(docs_path) as f:
        text = f.read()
    rendered, problems = render_docs(table, text)
    if args.command == "write-docs":
        for p in problems:
            print(p, file=sys.stderr)
        if rendered != text:
            with open(docs_path, "w") as f:
                f.write(rendered)
            print(f"rewrote {docs_path}")
        return 1 if problems else 0
    if rendered != text:
        problems.append("docs/config.md: key tables differ from config/keys.def; run "
                        "tools/config_keys.py write-docs (diff below)")
        import difflib
        diff = difflib.unified_diff(text.split("\n"), rendered.split("\n"), "docs/config.md",
                                    "generated", lineterm="", n=0)
        problems.extend("  " + line for line in list(diff)[:40])
    with open(os.path.join(args.root, "helm/epochgate/values.schema.json")) as f:
        problems += check_schema(table, json.load(f))
    with open(os.path.join(args.root, "helm/epochgate/values.yaml")) as f:
        problems += check_values(table, yaml.safe_load(f))
    for p in problems:
        print(p)
    print(f"{len(table['keys'])} keys; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

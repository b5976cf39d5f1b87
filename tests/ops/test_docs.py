#!/usr/bin/python3
"""tests/ops/test_docs.py: the YAML and the commands in README.md and docs/*.md
stay true. Every ```yaml block is one of:

- an epochgate config (its top-level keys are config keys): it must pass
  `epochgate --check-config FILE --no-files` (with `--bootstrap` added when
  the block leaves the brokers out, as a fragment does; the files it names
  are Secrets on a cluster, not here);
- Helm values of helm/epochgate (its keys are the chart's values, or one
  `epochgate:` map of a client chart's values): `helm template` with it must
  pass the chart's values.schema.json and render;
- anything else (a Chart.yaml, a pod spec fragment) must at least parse.

Every `epochgate --flag` written in a ```sh block must be a flag
`epochgate --help` lists. Run with /usr/bin/python3 (Debian's python3-yaml).

  test_docs.py --repo DIR --epochgate BIN [--k8s-tools DIR]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import yaml

BLOCK = re.compile(r"^```(yaml|yml|sh|console)\n(.*?)^```", re.M | re.S)


def blocks(repo):
    for path in ["README.md"] + sorted(glob.glob(os.path.join(repo, "docs", "*.md"))):
        full = os.path.join(repo, path)
        text = open(full).read()
        rel = os.path.relpath(full, repo)
        for m in BLOCK.finditer(text):
            yield rel, text[:m.start()].count("\n") + 2, m.group(1), m.group(2)


def config_top_keys(epochgate, repo):
    # The top-level keys of config/example.yaml plus the ones it leaves out:
    # keys.def is the list, and the example file must name most of them.
    keys = set()
    for line in open(os.path.join(repo, "config", "keys.def")):
        m = re.match(r"EG_(?:KEY|SECTION|CUSTOM|CHOICE)\(([a-z_]+)[,.]", line)
        if m:
            keys.add(m.group(1))
    return keys


def check_config_block(ctx, where, doc, text):
    failures = []
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        argv = [ctx.epochgate, "--check-config", path, "--no-files"]
        if "bootstrap_servers" not in doc:
            argv += ["--bootstrap", "kafka-0.kafka:9092"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            failures.append("%s: epochgate --check-config refused the block:\n%s" % (
                where, (r.stdout + r.stderr).replace(path, "<block>")))
    finally:
        os.unlink(path)
    return failures


def check_values_block(ctx, where, doc):
    if not ctx.helm:
        return ["%s: chart values, but no helm (tools/fetch-k8s-tools.sh)" % where]
    values = doc["epochgate"] if set(doc) == {"epochgate"} else doc
    base = {"kafka": {"bootstrapServers": ["kafka-0.kafka:9092"]},
            "image": {"repository": "registry.example/epochgate"}}
    with tempfile.TemporaryDirectory() as home:
        files = []
        for name, d in (("base.yaml", base), ("block.yaml", values)):
            p = os.path.join(home, name)
            with open(p, "w") as f:
                yaml.safe_dump(d, f)
            files += ["-f", p]
        env = dict(os.environ, HOME=home, HELM_CACHE_HOME=os.path.join(home, "c"),
                   HELM_CONFIG_HOME=os.path.join(home, "g"), HELM_DATA_HOME=os.path.join(home, "d"),
                   KUBECONFIG="/dev/null")
        r = subprocess.run([ctx.helm, "template", "docs", os.path.join(ctx.repo, "helm", "epochgate")]
                           + files, capture_output=True, text=True, timeout=60, env=env)
        if r.returncode != 0:
            return ["%s: helm template refused the block as values:\n%s" % (where, r.stderr)]
    return []


def check_commands(ctx, where, text):
    failures = []
    for line in text.splitlines():
        # Only commands that run epochgate (the program, by name or path).
        if not re.match(r"\s*(?:\$\s*)?(?:\S*/)?epochgate\s", line):
            continue
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", line.split("#", 1)[0]):
            if flag not in ctx.flags:
                failures.append("%s: `%s` is not an epochgate flag (epochgate --help)" % (where, flag))
    return failures


def example_names_every_key(repo):
    """config/example.yaml says it has every key: it must."""
    want = set()
    for line in open(os.path.join(repo, "config", "keys.def")):
        m = re.match(r"EG_(?:KEY|CHOICE|CUSTOM)\(([a-z_.]+),", line)
        if m:
            want.add(m.group(1))
    have = set()

    def walk(node, prefix):
        for k, v in node.items():
            path = prefix + str(k)
            have.add(path)
            if isinstance(v, dict) and path + "." not in ("broker_ports.map.",):
                walk(v, path + ".")
    walk(yaml.safe_load(open(os.path.join(repo, "config", "example.yaml"))), "")
    return ["config/example.yaml: no key %s (it says it has every key)" % k
            for k in sorted(want - have)]


def compatibility_versions(repo):
    """docs/compatibility.md names the versions the tests pin: the build
    scripts' and Debian's installed packages'."""
    with open(os.path.join(repo, "docs", "compatibility.md")) as f:
        page = f.read()

    def pinned(path, pattern):
        with open(os.path.join(repo, path)) as f:
            m = re.search(pattern, f.read(), re.M)
        return m.group(1) if m else None

    def debian(package):
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                           text=True)
        m = re.match(r"(?:\d+:)?([0-9][0-9.]*\d)", r.stdout) if r.returncode == 0 else None
        return m.group(1) if m else None
    rows = {
        "Apache Kafka (KRaft, 1 controller + 3 brokers)": pinned("tools/kafka/fetch.sh",
                                                                r"^version=\$\{1:-([0-9.]+)\}"),
        "Apache Kafka (KRaft, before KIP-951)": pinned("tests/realkafka/test_pre_kip951.py",
                                                      r'^rk\.VERSION = "([0-9.]+)"'),
        "librdkafka's mock cluster": pinned("tools/build-librdkafka.sh", r"^version=([0-9.]+)"),
        "librdkafka (`tools/rdkafka_check`)": pinned("tools/build-librdkafka.sh", r"^version=([0-9.]+)"),
        "KafkaJS": pinned("tests/integration/clients/build.sh", r"^kafkajs_version=([0-9.]+)"),
        "kcat": debian("kcat"),
        "librdkafka (Debian)": debian("librdkafka1"),
        "kafka-python": debian("python3-kafka"),
        "confluent-kafka (Python)": debian("python3-confluent-kafka"),
        "sarama": debian("golang-github-shopify-sarama-dev"),
        "kafka-go": debian("golang-github-segmentio-kafka-go-dev"),
    }
    failures = []
    for name, version in rows.items():
        m = re.search(r"^\| %s \| ([^|]+) \|" % re.escape(name), page, re.M)
        if version is None:
            failures.append("docs/compatibility.md: cannot tell which %s version the tests use" % name)
        elif not m or m.group(1).strip() != version:
            failures.append("docs/compatibility.md: %s is %s in the table, %s in the tests"
                            % (name, m.group(1).strip() if m else "missing", version))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--epochgate", required=True)
    ap.add_argument("--k8s-tools", help="what tools/fetch-k8s-tools.sh prints")
    ctx = ap.parse_args()
    ctx.helm = None
    tools = ctx.k8s_tools
    if not tools:
        r = subprocess.run([os.path.join(ctx.repo, "tools", "fetch-k8s-tools.sh")],
                           capture_output=True, text=True)
        tools = r.stdout.strip() if r.returncode == 0 else ""
    if tools and os.access(os.path.join(tools, "helm"), os.X_OK):
        ctx.helm = os.path.join(tools, "helm")
    help_text = subprocess.run([ctx.epochgate, "--help"], capture_output=True, text=True).stdout
    ctx.flags = set(re.findall(r"(--[a-z][a-z-]*)", help_text))
    config_keys = config_top_keys(ctx.epochgate, ctx.repo)
    chart_keys = set(yaml.safe_load(open(os.path.join(ctx.repo, "helm", "epochgate", "values.yaml"))))

    failures, counts = [], {"config": 0, "values": 0, "other yaml": 0, "templates": 0,
                          "command blocks": 0}
    # A block continued over several lines ("epochgate \" ...) is one command.
    for path, line, lang, text in blocks(ctx.repo):
        where = "%s:%d" % (path, line)
        if lang in ("sh", "console"):
            counts["command blocks"] += 1
            failures += check_commands(ctx, where, text.replace("\\\n", " "))
            continue
        if "{{" in text:
            counts["templates"] += 1  # a Helm template fragment: rendered by the chart tests
            continue
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as e:
            failures.append("%s: not YAML: %s" % (where, e))
            continue
        if not isinstance(doc, dict) or not doc:
            counts["other yaml"] += 1
            continue
        keys = set(doc)
        if keys <= config_keys:
            counts["config"] += 1
            failures += check_config_block(ctx, where, doc, text)
        elif keys <= chart_keys or keys == {"epochgate"}:
            counts["values"] += 1
            failures += check_values_block(ctx, where, doc)
        else:
            counts["other yaml"] += 1
    failures += example_names_every_key(ctx.repo)
    failures += compatibility_versions(ctx.repo)
    for f in failures:
        print("FAIL " + f)
    print("docs: %d config blocks checked by epochgate, %d values blocks rendered by helm, "
          "%d other YAML blocks parsed, %d Helm template fragments, %d command blocks' flags "
          "checked; %d failures" % (counts["config"], counts["values"], counts["other yaml"],
                                    counts["templates"], counts["command blocks"], len(failures)))
    if counts["config"] == 0:
        print("FAIL no config block found: the block pattern is wrong")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

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

Every command line in a ```sh, ```bash or ```console block (in a console
block, the `$ ` lines; a line ending in `\` goes on) is checked as far as it
can be without a cluster, on loopback only, each pipeline stage (`|`, `&&`,
`;`) on its own. Stand-ins (`<host>`, `$VAR`) take a value from PLACEHOLDERS
and the files a command names one from FILES; one missing from a table fails.

- `epochgate ...`, `build/proxy/epochgate ...`: run with its arguments plus
  `--check-config FILE --no-files` (FILE: its `--config` file, or an empty
  one), so flag values are validated, not only names; `--help`/`--version`
  run as written;
- `make [VAR=value] target`: `make -n target` (prints, runs nothing) knows
  the target, and the Makefile reads each VAR;
- a repository script (tools/, bench/, tests/, maybe after `python3` or
  `bash`): it exists, and is executable when run directly; when it has
  `--help` (argparse, the test harness, or a shell script naming --help)
  that exits 0, lists each flag the line uses, and a bare word is one of its
  `{choices}`; a harness `-k NAME` selects a test;
- `helm install|template`: run from the repository root as written (install
  with `--dry-run=client`), so the chart path, `--set` and `-f` values pass
  the schema and render;
- `curl` of the admin address (127.0.0.1:9644): the whole line runs against a
  real epochgate on loopback (admin on an ephemeral port, brokers unreachable),
  so the endpoint answers and each `grep` finds what it looks for;
- `ctest`: its flags are ctest's and each `-L` label has tests in the build;
- `podman`/`docker run IMAGE args`: the args are epochgate's, checked as above;
  `build`: the context has a Dockerfile;
- `cd DIR`: DIR is in the repository (or is the build directory);
- any other program (and podman, kcat, curl, java, ...): one tools/setup.sh
  installs (a listed package or one it depends on) or the base system has
  (Priority required/important), so a reader can run it;
- every `epochgate<sep>X.Y.Z` (a .deb, a tarball, an image tag) names the
  project's version.

What cannot be checked further is in ALLOW_LIST with the reason; the test
prints each such command on every run. An untagged block must not hold a
command (it would escape the checks). Run with /usr/bin/python3 (Debian's
python3-yaml).

  test_docs.py --repo DIR --epochgate BIN [--k8s-tools DIR]
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

def blocks(repo):
    """(file, first line of the block's text, language, text) of every fenced block."""
    for path in ["README.md"] + sorted(glob.glob(os.path.join(repo, "docs", "*.md"))):
        full = os.path.join(repo, path)
        rel = os.path.relpath(full, repo)
        lang, start, body = None, 0, []
        for n, line in enumerate(open(full).read().split("\n"), 1):
            if not line.startswith("```"):
                if lang is not None:
                    body.append(line)
            elif lang is None:
                lang, start, body = line[3:].strip(), n + 1, []
            else:
                yield rel, start, lang, "\n".join(body) + "\n"
                lang = None


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


# Stand-ins the docs write for what a reader types: each gets a sensible value.
PLACEHOLDERS = {
    "$PWD": "/home/reader",        # the directory the reader runs podman in
    "<host>": "kafka-0.kafka",
    "<port>": "9092",
    "<version>": "0.1.0",
}

# Files a command names, by the path the reader uses: (the repository file
# that stands in for it, the file that shows they are the same, a regex of it).
FILES = {
    # The reader's own config: the example is one.
    "epochgate.yaml": ("config/example.yaml", None, None),
    # What the .deb and the tarball install.
    "/usr/share/doc/epochgate/examples/epochgate.yaml": (
        "config/example.yaml", "cmake/Packaging.cmake",
        r"install\(FILES config/example\.yaml DESTINATION share/doc/epochgate/examples\s+"
        r"RENAME epochgate\.yaml"),
    # The image's default config (a mounted conf/ directory replaces it).
    "/etc/epochgate/epochgate.yaml": (
        "tools/image/epochgate.yaml", "Dockerfile",
        r"tools/image/epochgate\.yaml /out/etc/epochgate/epochgate\.yaml"),
}

# Commands (a regex on the command as written) checked no further than the
# generic checks (program installed, version named), and why. Printed.
ALLOW_LIST = [
    (r"^podman (tag|push) ", "needs the built image and the reader's own registry: only that "
     "podman is installed and that the tag names the project's version are checked"),
    (r"^podman (build|run) ", "builds or runs the image (minutes, root): the build context, "
     "podman and the epochgate arguments are checked, the podman options are not"),
    (r"^(sudo )?apt-get install ", "installs system-wide: apt-get and the package file's version "
     "are checked (tests/ops/test_package.py installs the .deb)"),
    (r"^kubectl ", "needs a cluster: only that kubectl is among the k8s tools is checked"),
]

# Commands that run the rest of the line as another command.
WRAPPERS = {"sudo": "the reader's way to be root (setup.sh runs apt-get the same way)"}

INTERPRETERS = {"python3", "/usr/bin/python3", "bash", "sh", "/bin/sh", "/bin/bash"}
SEPARATORS = {"|", "||", "&&", ";"}
ADMIN = "127.0.0.1:9644"  # the default admin address the docs curl


def command_lines(lang, text):
    """(line offset, command) of each command in a block: continuation lines
    joined, comments and console output dropped."""
    out, pending, first = [], "", 0
    for i, line in enumerate(text.split("\n")):
        if lang == "console":
            if not pending and not line.startswith("$ "):
                continue
            if not pending:
                line = line[2:]
        if not pending:
            first = i
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.strip() and not line.strip().startswith("#"):
            out.append((first, line.strip()))
    return out


def substitute(cmd):
    """The command with its stand-ins replaced; the ones PLACEHOLDERS lacks."""
    for k, v in PLACEHOLDERS.items():
        cmd = cmd.replace(k, v)
    missing = re.findall(r"<[a-zA-Z][\w.-]*>|\$\{?[A-Za-z_]\w*\}?", cmd)
    return cmd, missing


def stages(cmd):
    """The command's tokens split into pipeline stages at |, &&, || and ;."""
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    parts, cur = [], []
    for tok in lex:
        if tok in SEPARATORS:
            parts.append(cur)
            cur = []
        else:
            cur.append(tok)
    return [p for p in parts + [cur] if p]


def repo_file(ctx, name):
    """The repository file standing in for a file a command names, or None."""
    if name in FILES:
        return os.path.join(ctx.repo, FILES[name][0])
    if not os.path.isabs(name) and os.path.isfile(os.path.join(ctx.repo, name)):
        return os.path.join(ctx.repo, name)
    return None


def files_table_true(repo):
    """Each FILES entry stands for what it says: its evidence shows it."""
    failures = []
    for name, (src, evidence, pattern) in FILES.items():
        if not os.path.isfile(os.path.join(repo, src)):
            failures.append("FILES: %s stands in for %s but does not exist" % (src, name))
        elif evidence and not re.search(pattern, open(os.path.join(repo, evidence)).read()):
            failures.append("FILES: %s no longer puts %s at %s" % (evidence, src, name))
    return failures


def check_epochgate(ctx, args):
    """Problems with an epochgate invocation: run with --check-config --no-files."""
    if "--help" in args or "--version" in args:
        r = subprocess.run([ctx.epochgate] + args, capture_output=True, text=True, timeout=10)
        return [] if r.returncode == 0 else ["exits %d: %s" % (r.returncode, r.stderr.strip())]
    argv, problems = [], []
    config = None
    i = 0
    while i < len(args):
        a = args[i]
        argv.append(a)
        if a in ("--config", "--check-config") and i + 1 < len(args):
            path = repo_file(ctx, args[i + 1])
            if path is None:
                problems.append("names %s, which FILES does not stand in for" % args[i + 1])
                path = ctx.empty
            argv.append(path)
            config = config or path
            i += 1
        i += 1
    if problems:
        return problems
    if "--check-config" not in argv:
        argv += ["--check-config", config or ctx.empty]
    if "--no-files" not in argv:
        argv.append("--no-files")
    r = subprocess.run([ctx.epochgate] + argv, capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        out = (r.stdout + r.stderr).strip().replace(ctx.empty, "<no config>")
        shown = " ".join(argv[-3:]).replace(ctx.empty, "<empty config>")
        return ["epochgate ... %s refuses it (exit %d): %s" % (shown, r.returncode, out)]
    return []


def check_make(ctx, args):
    """Problems with a make line: unknown targets, variables the Makefile never reads."""
    makefile = open(os.path.join(ctx.repo, "Makefile")).read()
    problems = []
    targets = [a for a in args if not a.startswith("-") and "=" not in a]
    for var in [a.split("=", 1)[0] for a in args if "=" in a and not a.startswith("-")]:
        if not re.search(r"\$[({]%s[)}]" % re.escape(var), makefile):
            problems.append("the Makefile reads no variable %s" % var)
    for t in targets or [""]:
        r = subprocess.run(["make", "-n", "-C", ctx.repo] + ([t] if t else []), capture_output=True,
                           text=True, timeout=10)
        if r.returncode != 0:
            problems.append("make -n %s: %s" % (t, r.stderr.strip()))
    return problems


def script_help(ctx, argv):
    """The --help text of a script, or None when it has no --help."""
    text = open(argv[-1], errors="replace").read()
    if "argparse" not in text and "harness.main(" not in text and "--help" not in text:
        return None
    r = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=20, cwd=ctx.repo)
    return r.stdout if r.returncode == 0 else ("EXIT %d " % r.returncode) + r.stderr


def check_script(ctx, interpreter, script, args):
    """Problems with a repository script's invocation."""
    path = os.path.join(ctx.repo, script)
    if not os.path.isfile(path):
        return ["no such file in the repository"]
    if interpreter is None and not os.access(path, os.X_OK):
        return ["not executable (run it with its interpreter, or chmod +x)"]
    help_text = script_help(ctx, ([interpreter] if interpreter else []) + [path])
    if help_text is None:
        return []
    if help_text.startswith("EXIT "):
        return ["--help fails: " + help_text]
    problems = []
    takes_value = set(re.findall(r"(-{1,2}[\w-]+)[ =][A-Z][A-Z_]*", help_text))
    choices = [c.split(",") for c in re.findall(r"\{([\w,-]+)\}", help_text)]
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-"):
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(a.split("=")[0]), help_text):
                problems.append("%s is not a flag of %s (--help)" % (a, script))
            if a in takes_value:
                if a == "-k" and "harness.main(" in open(path).read() and not re.search(
                        r"^def test_\w*%s" % re.escape(args[i + 1]) if i + 1 < len(args) else "^$",
                        open(path).read(), re.M):
                    problems.append("-k %s selects no test in %s" % (args[i + 1], script))
                i += 1
        elif choices and not any(a in c for c in choices):
            problems.append("%s is none of %s's choices %s" % (a, script, choices))
        i += 1
    return problems


def check_helm(ctx, args):
    """Problems with a helm line: install and template run as written."""
    if not ctx.helm:
        return ["no helm (tools/fetch-k8s-tools.sh)"]
    if not args or args[0] not in ("install", "template"):
        return []
    argv = [ctx.helm] + args + (["--dry-run=client"] if args[0] == "install" else [])
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, HOME=home, HELM_CACHE_HOME=os.path.join(home, "c"),
                   HELM_CONFIG_HOME=os.path.join(home, "g"), HELM_DATA_HOME=os.path.join(home, "d"),
                   KUBECONFIG="/dev/null")
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=ctx.repo)
    if r.returncode != 0:
        return ["helm %s fails: %s" % (args[0], r.stderr.strip().splitlines()[-3:])]
    return []


def check_ctest(ctx, args):
    """Problems with a ctest line: its flags, its labels, its build directory."""
    problems = []
    help_text = subprocess.run(["ctest", "--help"], capture_output=True, text=True).stdout
    for i, a in enumerate(args):
        if a.startswith("-") and not re.search(r"(?m)^\s+%s\b" % re.escape(a), help_text):
            problems.append("%s is not a ctest flag" % a)
        if a == "--test-dir" and i + 1 < len(args) and args[i + 1] != "build":
            problems.append("--test-dir %s is not the build directory (build)" % args[i + 1])
        if a in ("-L", "--label-regex") and i + 1 < len(args):
            r = subprocess.run(["ctest", "--test-dir", ctx.build, "-N", "-L", args[i + 1]],
                               capture_output=True, text=True, timeout=20)
            m = re.search(r"Total Tests: (\d+)", r.stdout)
            if not m or m.group(1) == "0":
                problems.append("no test has the label %s" % args[i + 1])
    return problems


def check_container(ctx, args):
    """Problems with a podman/docker line: the epochgate arguments of run,
    the build context of build."""
    if args[:1] == ["run"]:
        image = [i for i, a in enumerate(args) if re.match(r"^([\w.-]+/)*epochgate:", a)]
        if not image:
            return ["no epochgate image in the run line"]
        rest = args[image[0] + 1:]
        return check_epochgate(ctx, rest) if rest else []
    if args[:1] == ["build"]:
        context = [a for a in args[1:] if not a.startswith("-")][-1:]
        if not context or not os.path.isfile(os.path.join(ctx.repo, context[0], "Dockerfile")):
            return ["the build context %s has no Dockerfile" % context]
    return []


def check_admin_line(ctx, cmd):
    """Problems with a command line that reads the admin server: run it,
    pipes and all, against a real epochgate on loopback."""
    admin = live_admin(ctx)
    if admin is None:
        return ["no epochgate to run it against: " + ctx.live_error]
    r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd.replace(ADMIN, admin)],
                       capture_output=True, text=True, timeout=10)
    if r.returncode != 0:
        return ["exits %d against a live epochgate: %s" % (r.returncode, r.stderr.strip()[:300])]
    return []


def live_admin(ctx):
    """The admin address of an epochgate started once on loopback (no broker)."""
    if ctx.live is None:
        ready = ctx.empty + ".ready"
        ctx.live = subprocess.Popen(
            [ctx.epochgate, "--bootstrap", "127.0.0.1:1", "--listen", "127.0.0.1:0",
             "--admin", "127.0.0.1:0", "--broker-port-base", "0", "--log-level", "off",
             "--ready-file", ready], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline and not os.path.exists(ready):
            time.sleep(0.05)
        m = re.search(r"admin=(\S+)", open(ready).read()) if os.path.exists(ready) else None
        ctx.live_admin = m.group(1) if m else None
        ctx.live_error = "" if m else "no ready file within 10 s"
    return ctx.live_admin


def setup_packages(repo):
    """The Debian packages tools/setup.sh installs, and those they depend on."""
    text = open(os.path.join(repo, "tools", "setup.sh")).read()
    names = set()
    for body in re.findall(r"^\w*packages\+?=\((.*?)\)", text, re.M | re.S):
        for line in body.split("\n"):
            names.update(line.split("#", 1)[0].split())
    r = subprocess.run(["dpkg-query", "-W", "-f=${Pre-Depends}, ${Depends}\n"] + sorted(names),
                       capture_output=True, text=True)
    names.update(re.findall(r"(?:^|[,|]\s*)([a-z0-9][a-z0-9.+-]+)", r.stdout, re.M))
    return names


def program_problem(ctx, prog):
    """Why a reader could not run a program, or None."""
    if prog in ("helm", "kubectl"):
        ok = ctx.k8s_tools and os.access(os.path.join(ctx.k8s_tools, prog), os.X_OK)
        return None if ok else "%s is not among the k8s tools (tools/fetch-k8s-tools.sh)" % prog
    path = shutil.which(prog)
    if not path:
        return "%s is not installed here (tools/setup.sh installs it? add it there)" % prog
    owners = set()
    for p in {path, "/usr/bin/" + prog, "/bin/" + prog, os.path.realpath(path)}:
        r = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
        owners.update(o.strip() for o in r.stdout.split(":", 1)[0].split(",") if r.returncode == 0)
    owners = {o.split(":")[0] for o in owners}
    if owners & ctx.setup_packages:
        return None
    for o in owners:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Priority}", o], capture_output=True, text=True)
        if r.stdout in ("required", "important"):
            return None
    return "%s (package %s) is neither installed by tools/setup.sh nor in the base system" % (
        prog, ",".join(sorted(owners)) or "none")


def check_versions(ctx, cmd):
    """Problems with the versions an artifact name or image tag in a command names."""
    return ["%s names version %s, the project is %s" % (m.group(0), m.group(1), ctx.version)
            for m in re.finditer(r"epochgate[_:-]v?(\d+\.\d+\.\d+)", cmd) if m.group(1) != ctx.version]


def check_stage(ctx, argv):
    """Problems with one pipeline stage (a program and its arguments)."""
    prog, args = argv[0], argv[1:]
    if re.match(r"^[A-Z_][A-Z0-9_]*=", prog):  # an environment assignment (PYTHONPATH=tests/lib)
        return check_stage(ctx, args) if args else []
    if prog in WRAPPERS:
        return check_stage(ctx, args) if args else ["%s of nothing" % prog]
    if prog == "cd":
        d = args[0] if args else ""
        return [] if d == "build" or os.path.isdir(os.path.join(ctx.repo, d)) else [
            "cd %s: no such directory in the repository" % d]
    if prog == "epochgate" or prog.endswith("/proxy/epochgate"):
        return check_epochgate(ctx, args)
    if prog in INTERPRETERS and args and "/" in args[0] and not args[0].startswith("-"):
        problem = program_problem(ctx, prog)
        return [problem] if problem else check_script(ctx, prog, args[0], args[1:])
    if prog.startswith(("tools/", "bench/", "tests/", "./tools/", "./bench/", "./tests/")):
        return check_script(ctx, None, prog[2:] if prog.startswith("./") else prog, args)
    if prog.startswith(("build/", "./build/")):
        return [] if os.path.exists(os.path.join(ctx.build, prog.split("build/", 1)[1])) else [
            "the build makes no %s" % prog]
    problem = program_problem(ctx, prog)
    if problem:
        return [problem]
    if prog == "make":
        return check_make(ctx, args)
    if prog == "helm":
        return check_helm(ctx, args)
    if prog == "ctest":
        return check_ctest(ctx, args)
    if prog in ("podman", "docker"):
        return check_container(ctx, args)
    return []


def check_command(ctx, cmd):
    """Problems with one command line (all its stages); the allow-list reason if any."""
    cmd, missing = substitute(cmd)
    if missing:
        return ["stand-in %s has no value in PLACEHOLDERS" % m for m in missing], None
    reason = next((r for pat, r in ALLOW_LIST if re.search(pat, cmd)), None)
    problems = check_versions(ctx, cmd)
    try:
        parts = stages(cmd)
    except ValueError as e:
        return problems + ["does not parse as a shell line: %s" % e], reason
    for argv in parts:
        problems += check_stage(ctx, argv)
    if ADMIN in cmd and any(argv[0] == "curl" for argv in parts) and not problems:
        problems += check_admin_line(ctx, cmd)
    return problems, reason


def check_commands(ctx, path, line, lang, text):
    """Failures and allow-listed notes for every command of one block."""
    failures, notes = [], []
    for offset, cmd in command_lines(lang, text):
        where = "%s:%d: %s" % (path, line + offset, " ".join(cmd.split()))
        problems, reason = check_command(ctx, cmd)
        failures += ["%s: %s" % (where, p) for p in problems]
        if reason:
            notes.append("%s: %s" % (where, reason))
    return failures, notes


COMMAND_START = re.compile(r"^\s*(?:\$ )?(?:sudo )?(?:epochgate|\S*/epochgate|make|helm|kubectl|"
                           r"curl|podman|docker|ctest|python3|/usr/bin/python3|tools/\S+|"
                           r"bench/\S+|tests/\S+)(?:\s|$)")


def untagged_commands(path, line, text):
    """An untagged block is output; a command in one would escape the checks."""
    return ["%s:%d: %s: a command in a block with no language (tag it ```sh)" % (
        path, line + i, l.strip()) for i, l in enumerate(text.split("\n")) if COMMAND_START.match(l)]


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
    scripts' and Debian's installed packages' (the kept clients' rows), and
    for the client matrix (rendered from its results by
    tools/clients/gen_compatibility.py, checked by ops.compatibility_doc) the
    versions tests/clients/clients.json names are the ones go.mod and the
    Java fetch pin, and each shows in the page's header as "name version"."""
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
        "KafkaJS (integration peer)": pinned("tests/integration/clients/build.sh", r"^kafkajs_version=([0-9.]+)"),
        "kcat": debian("kcat"),
        "librdkafka (Debian)": debian("librdkafka1"),
        "kafka-python (Debian)": debian("python3-kafka"),
        "confluent-kafka (Python, Debian)": debian("python3-confluent-kafka"),
        "sarama (Debian)": debian("golang-github-shopify-sarama-dev"),
        "kafka-go (Debian)": debian("golang-github-segmentio-kafka-go-dev"),
    }
    failures = []
    for name, version in rows.items():
        m = re.search(r"^\| %s \| ([^|]+) \|" % re.escape(name), page, re.M)
        if version is None:
            failures.append("docs/compatibility.md: cannot tell which %s version the tests use" % name)
        elif not m or m.group(1).strip() != version:
            failures.append("docs/compatibility.md: %s is %s in the table, %s in the tests"
                            % (name, m.group(1).strip() if m else "missing", version))
    import json
    with open(os.path.join(repo, "tests", "clients", "clients.json")) as f:
        matrix = {c["name"]: c["version"] for c in json.load(f)["clients"]}
    gomod = os.path.join("tests", "clients", "go", "go.mod")
    modules = {"franz-go": r"^\s*github\.com/twmb/franz-go v([0-9.]+)$",
               "sarama": r"^\s*github\.com/IBM/sarama v([0-9.]+)$",
               "kafka-go": r"^\s*github\.com/segmentio/kafka-go v([0-9.]+)$"}
    for name, pattern in modules.items():
        if matrix.get(name) != pinned(gomod, pattern):
            failures.append("tests/clients/clients.json: %s %s, go.mod pins %s" % (
                name, matrix.get(name), pinned(gomod, pattern)))
    kafka = pinned("tools/kafka/fetch.sh", r"^version=\$\{1:-([0-9.]+)\}")
    if "java" in matrix and matrix["java"] != kafka:
        failures.append("tests/clients/clients.json: java %s, tools/kafka/fetch.sh pins %s" % (matrix["java"], kafka))
    for name, version in matrix.items():
        if "| %s %s " % (name, version) not in page and "| %s %s |" % (name, version) not in page:
            failures.append("docs/compatibility.md: no matrix column for %s %s" % (name, version))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--epochgate", required=True)
    ap.add_argument("--k8s-tools", help="what tools/fetch-k8s-tools.sh prints")
    ctx = ap.parse_args()
    started = time.time()
    ctx.repo = os.path.abspath(ctx.repo)
    ctx.epochgate = os.path.abspath(ctx.epochgate)
    ctx.build = os.path.dirname(os.path.dirname(ctx.epochgate))  # BUILD/proxy/epochgate
    ctx.helm = None
    if not ctx.k8s_tools:
        r = subprocess.run([os.path.join(ctx.repo, "tools", "fetch-k8s-tools.sh")],
                           capture_output=True, text=True)
        ctx.k8s_tools = r.stdout.strip() if r.returncode == 0 else ""
    if ctx.k8s_tools and os.access(os.path.join(ctx.k8s_tools, "helm"), os.X_OK):
        ctx.helm = os.path.join(ctx.k8s_tools, "helm")
    ctx.version = re.search(r"project\(epochgate VERSION ([0-9.]+)",
                            open(os.path.join(ctx.repo, "CMakeLists.txt")).read()).group(1)
    ctx.setup_packages = setup_packages(ctx.repo)
    ctx.live = None
    config_keys = config_top_keys(ctx.epochgate, ctx.repo)
    chart_keys = set(yaml.safe_load(open(os.path.join(ctx.repo, "helm", "epochgate", "values.yaml"))))

    failures, notes = files_table_true(ctx.repo), []
    counts = {"config": 0, "values": 0, "other yaml": 0, "templates": 0, "command blocks": 0,
              "commands": 0, "output blocks": 0}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as empty:
        ctx.empty = empty.name
        try:
            for path, line, lang, text in blocks(ctx.repo):
                where = "%s:%d" % (path, line)
                if lang in ("sh", "bash", "console"):
                    counts["command blocks"] += 1
                    counts["commands"] += len(command_lines(lang, text))
                    f, n = check_commands(ctx, path, line, lang, text)
                    failures += f
                    notes += n
                    continue
                if lang == "":
                    counts["output blocks"] += 1
                    failures += untagged_commands(path, line, text)
                    continue
                if lang not in ("yaml", "yml"):
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
        finally:
            if ctx.live:
                ctx.live.terminate()
                ctx.live.wait(timeout=10)
            if os.path.exists(ctx.empty + ".ready"):
                os.unlink(ctx.empty + ".ready")
    failures += example_names_every_key(ctx.repo)
    failures += compatibility_versions(ctx.repo)
    for n in notes:
        print("NOT FULLY CHECKED (ALLOW_LIST) " + n)
    for f in failures:
        print("FAIL " + f)
    print("docs: %d config blocks checked by epochgate, %d values blocks rendered by helm, "
          "%d other YAML blocks parsed, %d Helm template fragments, %d commands in %d command "
          "blocks checked (%d allow-listed), %d output blocks free of commands; %d failures "
          "in %.1f s" % (counts["config"], counts["values"], counts["other yaml"],
                         counts["templates"], counts["commands"], counts["command blocks"],
                         len(notes), counts["output blocks"], len(failures), time.time() - started))
    if counts["config"] == 0 or counts["commands"] == 0:
        print("FAIL no config block or no command found: the block pattern is wrong")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

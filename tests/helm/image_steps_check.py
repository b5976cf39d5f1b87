#!/usr/bin/python3
"""tests/helm/image_steps_check.py: the Dockerfile and its host stand-in,
tools/image/build-image-steps.sh, describe the same image: the same build
and runtime packages, the same cmake flags; and the Dockerfile keeps its
promises: a non-root numeric USER that matches the script, the binary as
ENTRYPOINT with the baked config, the bootstrap and admin ports exposed, and a
.dockerignore that keeps every file the build copies or configures with.

  image_steps_check.py --repo DIR

Owns: agreement between Dockerfile, .dockerignore and the script. Must never:
build anything (the image_build_steps test does). Standard library only.
"""

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys


def instructions(path):
    """Dockerfile instructions as (KEYWORD, text) with continuations joined."""
    out, cur = [], ""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not cur and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.rstrip().endswith("\\"):
                cur += line.rstrip()[:-1] + " "
                continue
            cur += line
            kw, _, rest = cur.strip().partition(" ")
            out.append((kw.upper(), rest.strip()))
            cur = ""
    return out


def stages(instrs):
    """{stage name: [instructions]} split at FROM ... AS name."""
    result, name = {}, None
    for kw, rest in instrs:
        if kw == "FROM":
            m = re.search(r"\bAS\s+(\S+)", rest, re.I)
            name = m.group(1) if m else rest
            result[name] = []
        elif name:
            result[name].append((kw, rest))
    return result


def apt_packages(stage):
    """Packages of the stage's `apt-get install` (options and shell operators dropped)."""
    pkgs = []
    for kw, rest in stage:
        if kw != "RUN" or "apt-get install" not in rest:
            continue
        after = rest.split("apt-get install", 1)[1]
        for tok in shlex.split(after.split("&&", 1)[0]):
            if not tok.startswith("-"):
                pkgs.append(tok)
    return pkgs


def script_list(repo, what):
    r = subprocess.run([os.path.join(repo, "tools/image/build-image-steps.sh"), "--print", what],
                       capture_output=True, text=True, check=True)
    return r.stdout.split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    repo = ap.parse_args().repo
    problems = []
    st = stages(instructions(os.path.join(repo, "Dockerfile")))
    if set(st) != {"build", "runtime"}:
        problems.append(f"Dockerfile stages are {sorted(st)}, expected build and runtime")
    build, runtime = st.get("build", []), st.get("runtime", [])

    for what, stage in (("build-packages", build), ("runtime-packages", runtime)):
        docker, script = apt_packages(stage), script_list(repo, what)
        if sorted(docker) != sorted(script):
            problems.append(f"{what}: Dockerfile {sorted(docker)} != script {sorted(script)} "
                            f"(only in Dockerfile: {sorted(set(docker) - set(script))}, "
                            f"only in script: {sorted(set(script) - set(docker))})")
    configure = [rest for kw, rest in build if kw == "RUN" and "cmake -S" in rest]
    flags = re.findall(r"-D[A-Z_]+=\S+", configure[0].split("&&")[0]) if configure else []
    if sorted(flags) != sorted(script_list(repo, "cmake-flags")):
        problems.append(f"cmake flags: Dockerfile {flags} != script {script_list(repo, 'cmake-flags')}")
    if not any(kw == "RUN" and "--target epochgate" in rest for kw, rest in build):
        problems.append("the build stage does not build the epochgate target")

    users = [rest for kw, rest in runtime if kw == "USER"]
    if not users or not re.fullmatch(r"\d+(:\d+)?", users[-1]) or users[-1].split(":")[0] == "0":
        problems.append(f"runtime USER must be numeric and non-root (runAsNonRoot needs a uid), got {users}")
    else:
        with open(os.path.join(repo, "tools/image/build-image-steps.sh"), encoding="utf-8") as f:
            uid = re.search(r"^image_uid=(\d+)", f.read(), re.M)
        if not uid or uid.group(1) != users[-1].split(":")[0]:
            problems.append(f"script runs as uid {uid and uid.group(1)}, image USER is {users[-1]}")
    entry = [rest for kw, rest in runtime if kw == "ENTRYPOINT"]
    if entry != ['["/usr/local/bin/epochgate"]']:
        problems.append(f"ENTRYPOINT {entry} is not the epochgate binary (exec form)")
    cmd = [rest for kw, rest in runtime if kw == "CMD"]
    if not cmd or "/etc/epochgate/epochgate.yaml" not in cmd[-1]:
        problems.append(f"CMD {cmd} does not load /etc/epochgate/epochgate.yaml")
    exposed = {p for kw, rest in runtime if kw == "EXPOSE" for p in rest.split()}
    for port in ("9092", "9644"):
        if port not in exposed:
            problems.append(f"port {port} not EXPOSEd")
    if any(kw == "VOLUME" for kw, _ in runtime):
        problems.append("a VOLUME in the runtime stage: nothing is written at run time")

    # .dockerignore must keep what the build stage reads.
    spec = importlib.util.spec_from_file_location("runtime_root", os.path.join(repo, "tools/image/runtime_root.py"))
    rr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rr)
    ignored = rr.dockerignore_regexes(repo)
    needed = ["CMakeLists.txt", "cmake/Dependencies.cmake", "tools/image/epochgate.yaml"]
    for dirpath, _, files in os.walk(repo):
        rel = os.path.relpath(dirpath, repo)
        if rel.split(os.sep)[0].startswith(("build", ".git")):
            continue
        if "CMakeLists.txt" in files:
            needed.append(os.path.normpath(os.path.join(rel, "CMakeLists.txt")))
    for path in needed:
        parts = path.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        if any(r.match(p) for r in ignored for p in prefixes):
            problems.append(f".dockerignore leaves out {path}, which the build needs")

    for p in problems:
        print(f"FAIL: {p}")
    if not problems:
        print(f"PASS: Dockerfile and tools/image/build-image-steps.sh agree "
              f"({len(apt_packages(build))} build, {len(apt_packages(runtime))} runtime packages); "
              f"{len(needed)} build inputs kept by .dockerignore")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""tools/check_layers.py: checks that proxy/'s subsystems include only what
their CMake DEPS allow, so a new back-edge fails the build.

  check_layers.py --root SRC --layers BUILD/proxy_layers.txt

The layers file is written by proxy/CMakeLists.txt (epochgate_subsystem):
one line per subsystem, "name: dep dep ...". Rules:
  - a file in proxy/<name>/ includes "proxy/<x>/..." only for x == name
    or x in name's deps;
  - common/, codec/, policy/, metrics/ and config/ never include "proxy/...",
    and common/ includes nothing of the project;
  - every folder of proxy/ is a declared subsystem, and no source file
    sits at proxy/'s top level.
Prints one "file:line: reason" per violation; exit 1 if any, 0 if none.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LOWER_FOLDERS = ("common", "codec", "policy", "metrics", "config")
SOURCE_SUFFIXES = (".h", ".cc")


def read_layers(path):
    """Returns {subsystem: set(deps)} from the file CMake wrote."""
    layers = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if ":" not in line:
                continue
            name, deps = line.split(":", 1)
            layers[name.strip()] = set(deps.split())
    return layers


def sources(folder):
    for dirpath, _, names in os.walk(folder):
        for n in sorted(names):
            if n.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, n)


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def check(root, layers):
    """Returns the list of violations as 'file:line: reason' strings."""
    problems = []
    proxy = os.path.join(root, "proxy")
    for entry in sorted(os.listdir(proxy)):
        full = os.path.join(proxy, entry)
        if os.path.isdir(full) and entry not in layers:
            problems.append(f"proxy/{entry}/: not a subsystem declared in proxy/CMakeLists.txt")
        elif os.path.isfile(full) and entry.endswith(SOURCE_SUFFIXES):
            problems.append(f"proxy/{entry}: source file at proxy/'s top level; "
                            "it belongs in a subsystem folder")
    for name, deps in sorted(layers.items()):
        allowed = deps | {name}
        for path in sources(os.path.join(proxy, name)):
            rel = os.path.relpath(path, root)
            for number, target in includes(path):
                parts = target.split("/")
                if parts[0] == "proxy" and len(parts) > 2 and parts[1] not in allowed:
                    problems.append(f"{rel}:{number}: {name}/ includes {target}, but {name} "
                                    f"may include only {', '.join(sorted(allowed))}")
    for folder in LOWER_FOLDERS:
        for path in sources(os.path.join(root, folder)):
            rel = os.path.relpath(path, root)
            for number, target in includes(path):
                if folder == "common" and not target.startswith("common/") and "/" in target:
                    problems.append(f"{rel}:{number}: common/ includes nothing of the project, "
                                    f"but includes {target}")
                elif target.startswith("proxy/"):
                    problems.append(f"{rel}:{number}: {folder}/ is below proxy/ and may not "
                                    f"include {target}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="source tree root")
    ap.add_argument("--layers", required=True, help="proxy_layers.txt written by CMake")
    args = ap.parse_args()
    problems = check(args.root, read_layers(args.layers))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break proxy/'s layering "
              "(proxy/CMakeLists.txt declares it)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

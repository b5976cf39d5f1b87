#!/usr/bin/env python3
"""Every document a source comment or a doc cites exists in the repository.

Comments point readers at docs ("docs/architecture.md section 7",
"proxy/session/session.cc"); a path that names no file sends them nowhere,
which is how citations of design notes outside the repository went stale.
Checks *.md, *.h, *.cc, *.py, *.sh, *.txt and *.cmake files tracked by git
for repository-relative paths of .md files and of files under the product
folders, and fails listing each one that does not exist.
"""
import argparse
import os
import re
import subprocess
import sys

# A repository path: a known top folder, then path characters, ending in a
# file suffix that names a source or a document.
PRODUCT_TOPS = ("codec", "policy", "proxy", "metrics", "config", "docs", "tools", "tests",
                "helm", "bench", "fuzz")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]+\.(?:md|h|cc|py|sh|yaml|def|schema))(?![\w-]|\.\w)"
                  % "|".join(PRODUCT_TOPS))
# Documents that live outside the repository; naming one is the bug.
OUTSIDE = re.compile(r"\b(DESIGN|FACTS|STYLE|CLIENTS|REAL-KAFKA|HOUSE-REVIEW)\.md\b")
SUFFIXES = (".md", ".h", ".cc", ".py", ".sh", ".txt", ".cmake")


def tracked_files(repo):
    out = subprocess.check_output(["git", "-C", repo, "ls-files"], text=True)
    return [f for f in out.split() if f.endswith(SUFFIXES) or f.endswith("CMakeLists.txt")]


def problems(repo):
    found = []
    for rel in tracked_files(repo):
        if rel.startswith("codec/schema/"):
            continue
        try:
            with open(os.path.join(repo, rel), encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for number, line in enumerate(lines, 1):
            m = OUTSIDE.search(line)
            if m and "../shared" not in line:
                found.append(f"{rel}:{number}: cites {m.group(0)}, which is not in the repository")
            for path in PATH.findall(line):
                path = path.rstrip(".")
                # Generated at build time (build/generated/codec/messages/),
                # and placeholders in usage texts.
                if path.startswith("codec/messages/") or "_x." in path:
                    continue
                if not os.path.exists(os.path.join(repo, path)) and \
                        not path.startswith(("build/", "tests/.", "tools/.")):
                    found.append(f"{rel}:{number}: names {path}, which does not exist")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True)
    args = ap.parse_args()
    found = problems(args.repo)
    for p in found:
        print(p)
    print(f"{len(found)} stale reference(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

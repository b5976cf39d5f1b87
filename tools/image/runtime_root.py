#!/usr/bin/python3
"""tools/image/runtime_root.py: the parts of tools/image/build-image-steps.sh
that need more than shell: the Docker build context, the shared-library to
Debian-package check, and the runtime root filled from Debian packages.

  runtime_root.py context --source DIR --out DIR
      copy DIR to OUT, leaving out what DIR/.dockerignore leaves out
  runtime_root.py check-libs --binary FILE --packages P...
      every library `ldd FILE` resolves must belong (dpkg -S) to one of P or to
      a package P depends on (what apt-get install P brings); every P must be
      the owner of at least one of them. Exit 1 with the reasons otherwise.
  runtime_root.py populate --root DIR --packages P...
      copy into DIR the files of P and of every package they depend on
      (dpkg -L), on a merged-/usr layout like debian:bookworm, plus the
      /etc/passwd and /etc/group entries the Dockerfile's useradd creates.

Owns: mirroring what the Dockerfile's runtime stage would contain.
Must never: install or remove packages, or write outside --out / --root.
Python 3 standard library only (runs as /usr/bin/python3).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

IMAGE_UID = 10001
IMAGE_GID = 10001
# Files of packages that a runtime root never needs (the slim image drops them too).
SKIPPED_PREFIXES = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/",
                    "/usr/share/locale/", "/usr/share/lintian/", "/usr/share/bug/")
MERGED_USR = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}


def dockerignore_regexes(source):
    """Regexes for DIR/.dockerignore's patterns (Docker's rules: paths relative
    to the context root, * and ? within one path segment, ** across segments).
    Exceptions (!pattern) are refused: nothing here needs them."""
    path = os.path.join(source, ".dockerignore")
    out = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("!"):
                sys.exit(f".dockerignore: exception patterns are not supported here: {line}")
            pat = os.path.normpath(line.lstrip("/"))
            rx, i = "", 0
            while i < len(pat):
                if pat.startswith("**/", i):
                    rx += "(?:.*/)?"
                    i += 3
                elif pat.startswith("**", i):
                    rx += ".*"
                    i += 2
                elif pat[i] == "*":
                    rx += "[^/]*"
                    i += 1
                elif pat[i] == "?":
                    rx += "[^/]"
                    i += 1
                else:
                    rx += re.escape(pat[i])
                    i += 1
            out.append(re.compile("^" + rx + "$"))
    return out


def cmd_context(args):
    ignored = dockerignore_regexes(args.source)

    def excluded(rel):
        return any(r.match(rel) for r in ignored)

    os.makedirs(args.out, exist_ok=True)
    count = 0
    for dirpath, dirnames, filenames in os.walk(args.source):
        rel_dir = os.path.relpath(dirpath, args.source)
        rel_dir = "" if rel_dir == "." else rel_dir
        kept = []
        for d in dirnames:
            rel = os.path.join(rel_dir, d)
            full = os.path.join(dirpath, d)
            if excluded(rel):
                continue
            if os.path.islink(full):  # a symlink to a directory is copied as a link
                os.symlink(os.readlink(full), os.path.join(args.out, rel))
                continue
            os.makedirs(os.path.join(args.out, rel), exist_ok=True)
            kept.append(d)
        dirnames[:] = kept
        for name in filenames:
            rel = os.path.join(rel_dir, name)
            if excluded(rel):
                continue
            src = os.path.join(dirpath, name)
            dst = os.path.join(args.out, rel)
            if os.path.islink(src):
                os.symlink(os.readlink(src), dst)
            else:
                shutil.copy2(src, dst)
            count += 1
    print(f"context: {count} files")
    return 0


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def installed(pkg):
    r = run(["dpkg-query", "-W", "-f=${Status}", pkg])
    return r.returncode == 0 and "install ok installed" in r.stdout


def dependency_closure(packages):
    """Installed packages that `apt-get install packages` brings: the packages
    and, recursively, their Depends and Pre-Depends (alternatives: those
    installed here). Returns {package: the listed package that pulled it}."""
    seen = {}
    todo = [(p, p) for p in packages]
    while todo:
        pkg, root = todo.pop()
        if pkg in seen or not installed(pkg):
            continue
        seen[pkg] = root
        r = run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", pkg])
        for clause in r.stdout.split(","):
            for alt in clause.split("|"):
                name = alt.strip().split(" ")[0].split(":")[0]
                if name:
                    todo.append((name, root))
    return seen


def owning_package(path):
    """Debian package that ships `path`, trying the merged-/usr spellings too."""
    candidates = [path, os.path.realpath(path)]
    for c in list(candidates):
        if c.startswith("/usr/"):
            candidates.append(c[len("/usr"):])
        else:
            candidates.append("/usr" + c)
    for c in candidates:
        r = run(["dpkg", "-S", c])
        if r.returncode == 0:
            for line in r.stdout.splitlines():
                if line.startswith("diversion"):
                    continue
                return line.split(":")[0].strip()
    return None


def cmd_check_libs(args):
    r = run(["ldd", args.binary])
    if r.returncode != 0:
        print(f"ldd {args.binary} failed: {r.stderr.strip()}", file=sys.stderr)
        return 1
    libs = []
    problems = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if not line or line.startswith("linux-vdso"):
            continue
        if "not found" in line:
            problems.append(f"{line.split()[0]}: not found on this machine")
            continue
        m = re.match(r"^(\S+) => (\S+) \(", line) or re.match(r"^((\S+)) \(", line)
        if m:
            libs.append((m.group(1), m.group(2)))
    closure = dependency_closure(args.packages)
    for pkg in args.packages:
        if pkg not in closure:
            problems.append(f"runtime package {pkg} is not installed here")
    used = set()
    for soname, path in libs:
        pkg = owning_package(path)
        if pkg is None:
            problems.append(f"{soname} ({path}) belongs to no Debian package: the image cannot have it")
            continue
        if pkg not in closure:
            problems.append(f"{soname} comes from {pkg}, which no runtime package brings: "
                            f"add {pkg} to the runtime packages of the Dockerfile and this script")
            continue
        used.add(pkg)
        how = "listed" if pkg in args.packages else f"dependency (of {closure[pkg]})"
        print(f"  {soname:32} {pkg:28} {how}")
    for pkg in args.packages:
        if pkg in closure and pkg not in used:
            problems.append(f"runtime package {pkg} ships no library the binary loads: drop it")
    for p in problems:
        print(f"check-libs: {p}", file=sys.stderr)
    return 1 if problems else 0


def copy_entry(path, root):
    """Copies one packaged file or symlink to the same place under `root`,
    with its directory spelled as on a merged-/usr system."""
    parent = os.path.realpath(os.path.dirname(path))
    dst_dir = os.path.join(root, parent.lstrip("/"))
    os.makedirs(dst_dir, exist_ok=True)
    dst = os.path.join(dst_dir, os.path.basename(path))
    if os.path.lexists(dst):
        return
    if os.path.islink(path):
        os.symlink(os.readlink(path), dst)
    else:
        shutil.copy2(path, dst)


def cmd_populate(args):
    root = os.path.abspath(args.root)
    for name, target in MERGED_USR.items():
        os.makedirs(os.path.join(root, target), exist_ok=True)
        link = os.path.join(root, name)
        if not os.path.lexists(link):
            os.symlink(target, link)
    closure = dependency_closure(args.packages)
    files = 0
    for pkg in sorted(closure):
        r = run(["dpkg-query", "-L", pkg])
        for path in r.stdout.splitlines():
            if not path.startswith("/") or path.startswith(SKIPPED_PREFIXES):
                continue
            if os.path.islink(path) or os.path.isfile(path):
                copy_entry(path, root)
                files += 1
    etc = os.path.join(root, "etc")
    os.makedirs(etc, exist_ok=True)
    with open(os.path.join(etc, "passwd"), "w", encoding="utf-8") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n"
                f"epochgate:x:{IMAGE_UID}:{IMAGE_GID}::/nonexistent:/usr/sbin/nologin\n")
    with open(os.path.join(etc, "group"), "w", encoding="utf-8") as f:
        f.write(f"root:x:0:\nepochgate:x:{IMAGE_GID}:\n")
    # The image's ld.so.cache comes from libc-bin's trigger; build the same here.
    conf_dir = os.path.join(etc, "ld.so.conf.d")
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(etc, "ld.so.conf"), "w", encoding="utf-8") as f:
        f.write("include /etc/ld.so.conf.d/*.conf\n")
    with open(os.path.join(conf_dir, "x86_64-linux-gnu.conf"), "w", encoding="utf-8") as f:
        f.write("/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n")
    r = run(["ldconfig", "-r", root])
    if r.returncode != 0:
        print(f"ldconfig -r {root}: {r.stderr.strip()}", file=sys.stderr)
        return 1
    print(f"runtime root: {files} files from {len(closure)} packages: {' '.join(sorted(closure))}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("context")
    c.add_argument("--source", required=True)
    c.add_argument("--out", required=True)
    c = sub.add_parser("check-libs")
    c.add_argument("--binary", required=True)
    c.add_argument("--packages", nargs="+", required=True)
    c = sub.add_parser("populate")
    c.add_argument("--root", required=True)
    c.add_argument("--packages", nargs="+", required=True)
    args = ap.parse_args()
    return {"context": cmd_context, "check-libs": cmd_check_libs,
            "populate": cmd_populate}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""tools/image/slim_rootfs.py IN.tar OUT.tar: the slim variant of a Debian
root filesystem tarball, as the -slim base image the Dockerfile's runtime
stage names: documentation, manual pages, info pages and translations are
left out (licence texts stay), and a dpkg configuration file tells dpkg to
leave the same paths out of every package installed later.

Owns: which paths a slim image drops. Must never: change a kept entry.
Python 3 standard library only.
"""

import fnmatch
import io
import sys
import tarfile

# (pattern, kept despite the pattern) in dpkg's path-exclude/path-include form.
EXCLUDED = ["/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*",
            "/usr/share/locale/*", "/usr/share/lintian/*", "/usr/share/groff/*"]
INCLUDED = ["/usr/share/doc/*/copyright", "/usr/share/locale/locale.alias"]
DPKG_CFG = "etc/dpkg/dpkg.cfg.d/slim-image"


def dropped(name):
    path = "/" + name.lstrip("./")
    if any(fnmatch.fnmatch(path, p) for p in INCLUDED):
        return False
    return any(fnmatch.fnmatch(path, p) for p in EXCLUDED)


def main(src, dst):
    kept = dropped_count = 0
    with tarfile.open(src, "r:") as tin, tarfile.open(dst, "w:", format=tarfile.PAX_FORMAT) as tout:
        for member in tin:
            # Directories stay (dpkg expects them); their contents go.
            if not member.isdir() and dropped(member.name):
                dropped_count += 1
                continue
            tout.addfile(member, tin.extractfile(member) if member.isreg() else None)
            kept += 1
        text = "# Slim image: leave documentation and translations out of later installs.\n"
        text += "".join(f"path-exclude {p}\n" for p in EXCLUDED)
        text += "".join(f"path-include {p}\n" for p in INCLUDED)
        data = text.encode()
        info = tarfile.TarInfo("./" + DPKG_CFG)
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        tout.addfile(info, io.BytesIO(data))
    print(f"slim root filesystem: kept {kept} entries, dropped {dropped_count}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[0])
    sys.exit(main(sys.argv[1], sys.argv[2]))

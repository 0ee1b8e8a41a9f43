#!/usr/bin/env python3
"""Unpacks a Debian package's files (data.tar.*) into a folder, like
`dpkg-deb -x DEB DIR`, for a GPU machine that has Python but no dpkg.
A .deb is an ar archive holding debian-binary, control.tar.* and data.tar.*."""
import io
import sys
import tarfile


def members(path):
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise SystemExit(f"unpack_deb: {path}: not an ar archive (not a .deb)")
        while True:
            header = f.read(60)
            if len(header) < 60:
                return
            name = header[:16].decode().strip().rstrip("/")
            size = int(header[48:58].decode().strip())
            data = f.read(size)
            if size % 2:
                f.read(1)
            yield name, data


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: unpack_deb.py DEB DIR")
    deb, dest = sys.argv[1], sys.argv[2]
    for name, data in members(deb):
        if name.startswith("data.tar"):
            if name.endswith(".zst"):
                raise SystemExit(f"unpack_deb: {deb}: zstd-compressed data, which Python's tarfile cannot read")
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
                safe = [m for m in tar.getmembers() if not m.name.startswith("/") and ".." not in m.name.split("/")]
                tar.extractall(dest, members=safe)
            return
    raise SystemExit(f"unpack_deb: {deb}: no data.tar member")


if __name__ == "__main__":
    main()

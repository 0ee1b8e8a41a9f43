#!/usr/bin/env python3
"""Safetensors interop helper for tests/nn/test_safetensors.c.

Writes and reads the format by hand with only the standard library and NumPy,
following the specification (https://github.com/huggingface/safetensors):
an 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data.

  make_safetensors_fixture.py write FILE
      Writes the fixture the C test loads: the parameters of
      Sequential(Linear(4, 3), ReLU(), Linear(3, 2)) as PyTorch's writer lays
      them out ("__metadata__" first, tensors sorted by name, data in that
      order, header padded with spaces to a multiple of 8). Element i of the
      k-th tensor in name order is (k + 1) + i / 8, exact in float32.

  make_safetensors_fixture.py read FILE
      Checks FILE against the rules the reference (Rust) reader enforces and
      prints one line per tensor: NAME DTYPE SHAPE BITS..., where BITS are the
      elements' raw little-endian bit patterns in hex, so the C side can
      compare exactly. If the `safetensors` package is importable, also loads
      FILE with it and checks it agrees. Exit status 1 on any violation.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I32": np.dtype("<i4"),
          "I64": np.dtype("<i8"), "U8": np.dtype("u1")}
BITS = {"F32": np.dtype("<u4"), "F64": np.dtype("<u8"), "I32": np.dtype("<u4"),
        "I64": np.dtype("<u8"), "U8": np.dtype("u1")}

FIXTURE = [("0.bias", [3]), ("0.weight", [3, 4]), ("2.bias", [2]), ("2.weight", [2, 3])]


def fixture_values(k, shape):
    n = int(np.prod(shape))
    return ((k + 1) + np.arange(n, dtype=np.float64) / 8).astype("<f4").reshape(shape)


def write(path):
    header = {"__metadata__": {"format": "pt"}}
    blobs = []
    at = 0
    for k, (name, shape) in enumerate(FIXTURE):
        data = fixture_values(k, shape).tobytes()
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def fail(msg):
    print("make_safetensors_fixture.py: " + msg, file=sys.stderr)
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        fail("%s: shorter than 8 bytes" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        fail("%s: header length %d beyond the file" % (path, n))
    text = raw[8:8 + n]
    if not text.startswith(b"{"):
        fail("%s: header does not start with '{'" % path)
    header = json.loads(text.decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    if not all(isinstance(v, str) for v in meta.values()):
        fail("%s: __metadata__ values must be strings" % path)
    # The reference reader requires the tensors to tile the data section
    # exactly: sorted by offset, each beginning where the previous ended.
    entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"])
    at = 0
    for name, info in entries:
        begin, end = info["data_offsets"]
        if begin != at:
            fail("%s: %s begins at %d, expected %d (gap or overlap)" % (path, name, begin, at))
        if info["dtype"] not in DTYPES:
            fail("%s: %s has dtype %s" % (path, name, info["dtype"]))
        size = int(np.prod(info["shape"], dtype=np.int64)) * DTYPES[info["dtype"]].itemsize
        if end - begin != size:
            fail("%s: %s holds %d bytes, shape needs %d" % (path, name, end - begin, size))
        at = end
    if at != len(data):
        fail("%s: tensors cover %d of %d data bytes" % (path, at, len(data)))
    arrays = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        arrays[name] = np.frombuffer(data[begin:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        bits = np.frombuffer(data[begin:end], dtype=BITS[info["dtype"]])
        print(name, info["dtype"], "x".join(str(d) for d in info["shape"]) or "scalar",
              " ".join("%x" % b for b in bits))
    try:
        from safetensors.numpy import load_file
    except ImportError:
        print("# safetensors package not installed: reference reader not run")
        return
    theirs = load_file(path)
    if sorted(theirs) != sorted(arrays):
        fail("%s: the safetensors package sees tensors %s" % (path, sorted(theirs)))
    for name, arr in arrays.items():
        if not np.array_equal(theirs[name], arr):
            fail("%s: the safetensors package reads %s differently" % (path, name))
    print("# safetensors package agrees")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "read"):
        fail("usage: make_safetensors_fixture.py write|read FILE")
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        read(sys.argv[2])


if __name__ == "__main__":
    main()

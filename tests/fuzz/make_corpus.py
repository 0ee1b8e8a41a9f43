#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (committed under corpus/):

  corpus/safetensors/  valid files for the targets' net (0.weight [3,4],
                       0.bias [3], 2.weight [2,3], 2.bias [2]), the
                       tests/nn fixture, and one file per kind of damage
  corpus/calls/        call sequences for fuzz_calls.c's interpreter, one
                       per area of the API (the encoder below mirrors its
                       decoder: keep the OP list in step with its enum)
  corpus/dlpack/       managed tensors for fuzz_dlpack.c's decoder: valid
                       imports of each dtype and layout, and one per
                       refusal (dtype, device, flags, version, layout)
  corpus/optim_state/  optimizer states for fuzz_optim_state.c's net (the
                       same 4 parameters): valid AdamW (with and without
                       the schedule) and SGD files, and one per refusal
  corpus/calls-shapes/ the shape-overflow repros (int64 wrap-around) as
                       call sequences (reshape that wraps int64, expand to
                       2^64 elements, empty tensors with 2^40 extents, cat
                       of [0, INT64_MAX] tensors)

Deterministic: running it again rewrites the same bytes.
  python3 tests/fuzz/make_corpus.py
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "nn", "fixtures", "mlp_4_3_2.safetensors")


def write(folder, name, data):
    path = os.path.join(HERE, "corpus", folder, name)
    with open(path, "wb") as f:
        f.write(data)


# ---- safetensors -----------------------------------------------------------

def st_file(header_text, data=b"", length=None, pad=True):
    h = header_text.encode() if isinstance(header_text, str) else header_text
    if pad:
        h += b" " * (-len(h) % 8)
    n = len(h) if length is None else length
    return struct.pack("<Q", n) + h + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def net_header(dtype="F32", size=4, meta=True):
    shapes = [("0.weight", [3, 4]), ("0.bias", [3]), ("2.weight", [2, 3]), ("2.bias", [2])]
    h, at = {}, 0
    for name, shape in shapes:
        n = size
        for s in shape:
            n *= s
        h[name] = entry(dtype, shape, at, at + n)
        at += n
    if meta:
        h["__metadata__"] = {"format": "pt"}
    return h, at


def values(count, fmt):
    return b"".join(struct.pack(fmt, (i % 7) / 4.0 - 0.5) for i in range(count))


def safetensors_corpus():
    shutil.copy(FIXTURE, os.path.join(HERE, "corpus", "safetensors", "fixture_mlp_4_3_2.safetensors"))
    h, n = net_header()
    good = values(n // 4, "<f")
    write("safetensors", "valid_f32", st_file(json.dumps(h, separators=(",", ":")), good))
    h64, n64 = net_header("F64", 8)
    write("safetensors", "valid_f64", st_file(json.dumps(h64), values(n64 // 8, "<d")))
    # 16-bit files: a lazy net takes them (its layers adopt the file's float
    # type), the f32 net refuses them.
    h16, n16 = net_header("F16", 2)
    write("safetensors", "valid_f16", st_file(json.dumps(h16), values(n16 // 2, "<e")))
    hb16, nb16 = net_header("BF16", 2)
    write("safetensors", "valid_bf16", st_file(json.dumps(hb16), b"".join(
        struct.pack("<f", (i % 7) / 4.0 - 0.5)[2:] for i in range(nb16 // 2))))
    hmix = json.loads(json.dumps(h16))
    hmix["0.bias"]["dtype"] = "BF16"
    write("safetensors", "f16_weight_bf16_bias", st_file(json.dumps(hmix), values(n16 // 2, "<e")))
    hn, _ = net_header(meta=False)
    write("safetensors", "valid_no_metadata_unpadded", st_file(json.dumps(hn), good, pad=False))
    # Reordered entries and data in another order than the names.
    items = list(h.items())[::-1]
    write("safetensors", "valid_reversed_entries", st_file("{" + ",".join(
        json.dumps(k) + ":" + json.dumps(v) for k, v in items) + "}", good))

    def damaged(name, mutate, data=good, **kw):
        hh = json.loads(json.dumps(h))
        mutate(hh)
        write("safetensors", name, st_file(json.dumps(hh), data, **kw))

    damaged("truncated_data", lambda x: None, good[:80])
    damaged("wrong_shape", lambda x: x["0.weight"].update(shape=[4, 3]))
    # A lazy linear takes any input size from the file (as torch's
    # LazyLinear does); the sized net must refuse [3, 2]. Found by libFuzzer.
    damaged("lazy_input_size", lambda x: x["0.weight"].update(shape=[3, 2], data_offsets=[0, 24]))
    damaged("unknown_dtype", lambda x: x["0.bias"].update(dtype="Q7"))
    damaged("bf16", lambda x: x["0.weight"].update(dtype="BF16", data_offsets=[0, 24]))
    damaged("overlap", lambda x: x["0.bias"].update(data_offsets=[40, 52]))
    damaged("reversed_offsets", lambda x: x["0.bias"].update(data_offsets=[60, 48]))
    damaged("size_mismatch", lambda x: x["0.bias"].update(data_offsets=[48, 56]))
    damaged("missing", lambda x: x.pop("2.bias"))
    damaged("unexpected", lambda x: x.update({"9.weight": entry("U8", [0], 92, 92)}))
    damaged("negative_extent", lambda x: x["0.weight"].update(shape=[3, -4]))
    damaged("float_offset", lambda x: x["0.bias"].update(data_offsets=[48.5, 60]))
    damaged("huge_offset", lambda x: x["0.bias"].update(data_offsets=[48, 9007199254740993]))
    damaged("huge_extent", lambda x: x["0.weight"].update(shape=[1 << 40, 1 << 40], data_offsets=[0, 48]))
    damaged("nine_dims", lambda x: x["0.weight"].update(shape=[1] * 9))
    damaged("zero_extent", lambda x: x["0.weight"].update(shape=[0, 4], data_offsets=[0, 0]))
    damaged("shape_not_array", lambda x: x["0.weight"].update(shape="3,4"))
    damaged("offsets_three", lambda x: x["0.weight"].update(data_offsets=[0, 24, 48]))
    damaged("entry_not_object", lambda x: x.update({"0.bias": [1, 2, 3]}))
    damaged("metadata_number", lambda x: x.update({"__metadata__": {"format": 1}}))
    damaged("metadata_not_object", lambda x: x.update({"__metadata__": "pt"}))
    damaged("i32_weight", lambda x: x["0.weight"].update(dtype="I32"))
    damaged("u8_bias", lambda x: x["0.bias"].update(dtype="U8", data_offsets=[48, 51]))
    damaged("length_past_end", lambda x: None, length=1 << 20)
    damaged("length_huge", lambda x: None, length=(1 << 64) - 1)
    # Text-level damage the JSON library would smooth over.
    text = json.dumps(h, separators=(",", ":"))
    write("safetensors", "duplicate_name", st_file(text[:-1] + ',"2.bias":' + json.dumps(h["2.bias"]) + "}", good))
    write("safetensors", "nul_escape_in_key", st_file(text.replace('"0.weight"', '"0.weight\\u0000junk"'), good))
    write("safetensors", "nul_escape_in_dtype", st_file(text.replace('"F32"', '"F32\\u0000x"', 1), good))
    write("safetensors", "raw_nul_in_key", st_file(text.replace('"0.weight"', '"0.we\x00ight"'), good))
    write("safetensors", "escaped_backslash_u0000", st_file(text.replace('"0.bias"', '"0.bias\\\\u0000"'), good))
    write("safetensors", "unicode_names", st_file(text.replace('"0.weight"', '"0.w\\u00e9ight\\ud83d\\ude00"'), good))
    write("safetensors", "garbage_after_json", st_file(text + "xyz", good))
    write("safetensors", "not_json", st_file('{"0.weight": {"dtype": "F32", "shape": [3,4 ,,}', good))
    write("safetensors", "not_object", st_file("[1, 2, 3]", good))
    write("safetensors", "deep_nesting", st_file('{"a":' + "[" * 2000 + "]" * 2000 + "}", b""))
    write("safetensors", "empty_object", st_file("{}", b""))
    write("safetensors", "empty_file", b"")
    write("safetensors", "short_file", b"\x10\x00\x00")
    write("safetensors", "zero_length_header", struct.pack("<Q", 0))


# ---- calls -----------------------------------------------------------------

OPS = ("CREATE ARANGE FROM_DATA RESHAPE TRANSPOSE PERMUTE NARROW EXPAND UNARY BINARY WHERE SCALAR "
       "CLAMP REDUCE NORM_DIMS SOFTMAX MATMUL CAST CONTIGUOUS CAT GATHER ONE_HOT COPY AXPY FILL READ "
       "RETAIN RELEASE SCOPE_BEGIN SCOPE_END KEEP NO_GRAD REQUIRES_GRAD BACKWARD GRAD DETACH LOSS").split()
OP = {name: i for i, name in enumerate(OPS)}
F32, F64, I32, I64, U8 = range(5)
EMPTY, ZEROS, ONES, FULL, RAND, RANDN = range(6)
UNARY = "neg abs exp log sqrt relu sigmoid tanh sin cos".split()
BINARY = "add sub mul div pow maximum minimum eq lt gt le ge ne mse".split()
HOSTILE = {-1: 248, -2: 249, "INT64_MAX": 250, "2^62+1": 251, "2^32": 252, "2^40": 253, "INT64_MIN": 254}
ALL = 255


def sc(v):
    """The scalar byte for v ((b - 100) / 8)."""
    b = int(round(v * 8 + 100))
    assert 0 <= b < 248
    return b


def dim(d):
    return ALL if d == "all" else d + 4


def shape(extents):
    assert len(extents) <= 4
    out = [len(extents)]
    for e in extents:
        out.append(HOSTILE[e] if e in HOSTILE else e)
    return out


class Calls:
    def __init__(self):
        self.b = []

    def op(self, name, *args):
        self.b.append(OP[name])
        for a in args:
            self.b.extend(a if isinstance(a, list) else [a])
        return self

    def create(self, kind, dtype, extents, value, slot):
        return self.op("CREATE", kind, dtype, shape(extents), sc(value), slot)

    def bytes(self):
        return bytes(self.b)


def calls_corpus():
    seqs = {}
    shape_seqs = {}  # shape overflow repros: corpus/calls-shapes
    c = Calls()
    c.create(ONES, F32, [2, 3], 0, 0).create(FULL, F32, [3], 1.5, 1)
    c.op("BINARY", 0, 1, BINARY.index("add"), 2).op("REDUCE", 2, 0, dim("all"), 0, 3).op("READ", 3, 0)
    seqs["add_sum"] = c
    c = Calls()
    c.create(RAND, F32, [2, 3], 0, 0).create(RAND, F32, [3, 4], 0, 1).op("MATMUL", 0, 1, 2).op("READ", 2, 0)
    seqs["matmul"] = c
    c = Calls()
    c.create(RANDN, F64, [4, 3], 0, 0).op("REQUIRES_GRAD", 0, 1)
    c.op("UNARY", 0, UNARY.index("tanh"), 1).op("REDUCE", 1, 1, dim("all"), 0, 2)
    c.op("BACKWARD", 2).op("GRAD", 0, 1, 3).op("READ", 3, 0)
    seqs["backward_tanh"] = c
    c = Calls()
    c.create(RAND, F32, [3, 4], 0, 0).op("REQUIRES_GRAD", 0, 1)
    c.create(ONES, F32, [4, 2], 0, 1).op("MATMUL", 0, 1, 2).op("SOFTMAX", 2, 1, dim(1), 3)
    c.op("REDUCE", 3, 1, dim("all"), 0, 4).op("BACKWARD", 4).op("BACKWARD", 4).op("GRAD", 0, 1, 5)
    seqs["backward_twice"] = c
    c = Calls()
    c.op("SCOPE_BEGIN").create(ONES, F32, [2, 2], 0, 0).create(ZEROS, F32, [2, 2], 0, 1)
    c.op("BINARY", 0, 1, BINARY.index("mul"), 2).op("KEEP", 2).op("SCOPE_END").op("READ", 2, 0)
    seqs["scope_keep"] = c
    c = Calls()
    c.op("SCOPE_BEGIN").op("SCOPE_BEGIN").create(RAND, F32, [3], 0, 0).op("KEEP", 0).op("KEEP", 0)
    c.op("SCOPE_END").op("CONTIGUOUS", 0, 1).op("SCOPE_END").op("READ", 0, 0)
    seqs["nested_scopes"] = c
    c = Calls()
    c.create(ONES, F32, [2, 3], 0, 0).op("CONTIGUOUS", 0, 1).op("CAST", 0, F32, 2).op("RETAIN", 0, 3)
    c.op("RELEASE", 0).op("RELEASE", 3).op("READ", 1, 0)
    seqs["same_tensor_back"] = c
    c = Calls()
    c.create(RAND, F32, [2, 3, 4], 0, 0).op("TRANSPOSE", 0, dim(0), dim(2), 1).op("CONTIGUOUS", 1, 2)
    c.op("PERMUTE", 0, [dim(2), dim(0), dim(1)] + [0] * 5, 3).op("NARROW", 3, dim(1), 1, 0, 1, 4)
    c.op("EXPAND", 4, shape([2, 4, 1, 3]), 5).op("READ", 5, 0)
    seqs["views"] = c
    c = Calls()
    c.create(ONES, F32, [2, 2], 0, 0).op("RESHAPE", 0, shape(["2^62+1", 4]), 1).op("NARROW", 1, dim(0), 0, 0, 1, 2)
    c.op("READ", 2, 0)
    shape_seqs["reshape_wraps"] = c
    c = Calls()
    c.create(ONES, F32, [1], 0, 0).op("EXPAND", 0, shape(["2^32", "2^32"]), 1).op("REDUCE", 1, 0, dim("all"), 0, 2)
    c.op("EXPAND", 0, shape(["2^62+1"]), 3).op("REDUCE", 3, 2, dim("all"), 0, 4)
    shape_seqs["expand_huge"] = c
    c = Calls()
    c.create(EMPTY, F32, [0, "2^40", "2^40"], 0, 0).create(ZEROS, F32, [0, "INT64_MAX"], 0, 1)
    c.op("CAT", 0, 3, [1, 1, 1], dim(1), 2).op("CAT", 0, 2, [1, 1], dim(1), 3)
    shape_seqs["empty_huge_extents"] = c
    c = Calls()
    c.create(ONES, F32, [2, 3], 0, 0).create(ONES, F32, [2, 3], 0, 1)
    c.op("CAT", 0, 2, [0, 1], dim(0), 2).op("CAT", 1, 2, [0, 1], dim(1), 3).op("CAT", 0, 0, dim(0), 4)
    seqs["cat_stack"] = c
    c = Calls()
    c.create(RAND, F32, [3, 4], 0, 0).create(ZEROS, I64, [3, 2], 0, 1).op("GATHER", 0, 1, dim(1), 2)
    c.create(FULL, I64, [3, 2], 7, 3).op("GATHER", 0, 3, dim(1), 4).op("READ", 2, 0)
    seqs["gather"] = c
    c = Calls()
    c.op("ARANGE", I64, sc(0), sc(4), sc(1), 0).op("ONE_HOT", 0, 4, F32, 1).op("ONE_HOT", 0, 3, F32, 2)
    c.op("ONE_HOT", 0, HOSTILE[-1], F32, 3).op("READ", 1, 0)
    seqs["one_hot"] = c
    c = Calls()
    c.create(RANDN, F32, [4, 4], 0, 0).op("ARANGE", I64, sc(0), sc(4), sc(1), 1).op("SCALAR", 1, 0, sc(-1.5), 2)
    c.op("CAST", 1, I64, 2).op("REQUIRES_GRAD", 0, 1).op("LOSS", 0, 1, 3).op("BACKWARD", 3).op("GRAD", 0, 1, 4)
    seqs["cross_entropy"] = c
    c = Calls()
    for i, name in enumerate(UNARY):
        c.create(RAND, F32 if i % 2 else F64, [3], 0, i % 8).op("UNARY", i % 8, i, 8 + i % 8)
    seqs["unary_all"] = c
    c = Calls()
    c.create(FULL, I32, [2, 1], 3, 0).create(FULL, U8, [3], 2, 1)
    for i in range(len(BINARY)):
        c.op("BINARY", 0, 1, i, 2 + i % 14)
    seqs["binary_mixed_dtypes"] = c
    c = Calls()
    c.create(FULL, I32, [4], 0, 0).op("BINARY", 0, 0, BINARY.index("div"), 1).create(FULL, F32, [4], 0, 2)
    c.op("BINARY", 2, 2, BINARY.index("div"), 3).op("CAST", 3, I32, 4).op("CAST", 3, U8, 5).op("READ", 4, 0)
    seqs["divide_by_zero_cast_nan"] = c
    c = Calls()
    c.create(FULL, F32, [3], 16, 0).op("SCALAR", 0, 1, 252, 1)  # 16 * 2^32
    c.op("CAST", 1, I32, 2).op("CAST", 1, U8, 3).op("CAST", 1, I64, 4).op("READ", 2, 0)
    seqs["cast_out_of_range"] = c
    c = Calls()
    c.create(RAND, F32, [2, 3], 0, 0).op("CLAMP", 0, sc(0.25), sc(0.75), 1).op("CLAMP", 0, 248, sc(1), 2)
    c.create(FULL, I32, [3], 5, 3).op("CLAMP", 3, 250, 249, 4).op("READ", 4, 0)
    seqs["clamp"] = c
    c = Calls()
    c.create(RAND, F32, [2, 3, 4], 0, 0)
    for k in range(5):
        c.op("REDUCE", 0, k, dim(k % 3 - 1), k % 2, 1 + k)
    c.op("NORM_DIMS", 0, 3, [dim(0), dim(2), 0, 0], 7).op("NORM_DIMS", 0, 3, [dim(0), dim(0), 0, 0], 8)
    c.create(ZEROS, F32, [0, 3], 0, 9).op("REDUCE", 9, 2, dim(0), 0, 10).op("REDUCE", 9, 1, dim("all"), 0, 11)
    seqs["reductions"] = c
    c = Calls()
    c.create(ONES, F32, [2, 3], 0, 0).create(RAND, F64, [3], 0, 1).op("COPY", 0, 1).op("AXPY", 0, 2, sc(2))
    c.op("FILL", 0, sc(-3)).op("FILL", 1, 248).op("COPY", 1, 0).op("READ", 0, 0)
    seqs["in_place"] = c
    c = Calls()
    c.create(ONES, U8, [2, 2], 0, 0).create(RAND, F32, [2, 2], 0, 1).create(ZEROS, F32, [1], 0, 2)
    c.op("WHERE", 0, 1, 2, 3).op("BINARY", 1, 2, BINARY.index("gt"), 4).op("WHERE", 4, 2, 1, 5).op("READ", 5, 0)
    seqs["where"] = c
    c = Calls()
    c.op("NO_GRAD", 1).create(RAND, F32, [3], 0, 0).op("REQUIRES_GRAD", 0, 1).op("UNARY", 0, 0, 1)
    c.op("NO_GRAD", 0).op("NO_GRAD", 0).op("BACKWARD", 1)
    seqs["no_grad"] = c
    c = Calls()
    c.op("FROM_DATA", F32, shape([2, 2]), [0, 0, 0xC0, 0x7F, 0, 0, 0x80, 0x7F] + [0] * 24, 0)
    c.op("FROM_DATA", I64, shape([3]), [0xFF] * 8 + [0] * 7 + [0x80] + [1] * 8, 1).op("CAST", 0, I64, 2)
    c.op("CAST", 1, F32, 3).op("READ", 2, 0)
    seqs["from_data_nan_int_min"] = c
    c = Calls()
    c.create(ONES, F32, [2], 0, 0).op("RESHAPE", 0, shape([-1]), 1).op("RESHAPE", 0, shape([-1, -1]), 2)
    c.op("RESHAPE", 0, [254] + [1] * 11, 3).op("TRANSPOSE", 0, dim(0), 250, 4).op("NARROW", 0, dim(0), 250, 0, 1, 5)
    c.op("NARROW", 0, dim(0), 1, 0, 2, 6).op("CREATE", ZEROS, [6, 5], shape([2]), sc(0), 7)
    seqs["bad_arguments"] = c
    c = Calls()
    c.create(RAND, F32, [3], 0, 0).op("REQUIRES_GRAD", 0, 1).op("DETACH", 0, 1).op("UNARY", 0, 2, 2)
    c.op("REDUCE", 2, 0, dim("all"), 0, 3).op("BACKWARD", 3).op("GRAD", 0, 0).op("GRAD", 0, 1, 4)
    seqs["detach_zero_grad"] = c
    c = Calls()
    c.op("SCOPE_BEGIN").create(RAND, F32, [2, 2], 0, 0).op("REQUIRES_GRAD", 0, 1).op("UNARY", 0, 6, 1)
    c.op("REDUCE", 1, 1, dim("all"), 0, 2).op("BACKWARD", 2).op("GRAD", 0, 1, 3).op("RETAIN", 3, 4)
    c.op("SCOPE_END").op("READ", 4, 0)
    seqs["grad_in_scope"] = c
    for name, seq in seqs.items():
        write("calls", name, seq.bytes())
    for name, seq in shape_seqs.items():
        write("calls-shapes", name, seq.bytes())


# ---- dlpack ------------------------------------------------------------------
# fuzz_dlpack.c's decoder: mode byte (bit 0 legacy, 1 read-only, 2 caller's
# READ_ONLY_OK, 3 unknown caller flag, 4 NULL strides, 5 NULL data,
# 6 misaligned, 7 other major version), dtype code, bits (< 0xc0: 8 << (b % 4)),
# lanes (< 0xf0: 1), device type index, device id (< 0xc0: 0), ndim (% 11),
# extents, strides, byte_offset (each: a byte 0..8 mod 9, or 0xf0 + 8 raw bytes),
# then the misalignment, flag and version bytes the mode asks for.

KDL = {"int": 0, "uint": 1, "float": 2, "bfloat": 4}
BITS = {8: 0, 16: 1, 32: 2, 64: 3}
DEV = {"cpu": 0, "cuda_host": 3, "cuda": 4, "opencl": 5, "vulkan": 6}


def any64(v):
    return bytes([0xF0]) + struct.pack("<q", v)


def dl(mode=0, code="float", bits=32, lanes=None, dev="cpu", dev_id=None, extents=(), strides=None,
       offset=0, tail=b""):
    out = bytes([mode, KDL[code], BITS[bits], 0 if lanes is None else 0xEF + lanes, DEV[dev]])
    out += bytes([0 if dev_id is None else dev_id, len(extents)])
    enc = lambda v: bytes([v]) if 0 <= v <= 8 else any64(v)
    out += b"".join(enc(e) for e in extents)
    out += b"".join(enc(s) for s in (strides if strides is not None else [0] * len(extents)))
    return out + enc(offset) + tail


def dlpack_corpus():
    write("dlpack", "f32_2x3_strided", dl(extents=(2, 3), strides=(3, 1)))
    write("dlpack", "f64_contiguous_null_strides", dl(mode=16, bits=64, extents=(2, 4)))
    write("dlpack", "u8_transposed", dl(code="uint", bits=8, extents=(3, 2), strides=(1, 3)))
    write("dlpack", "i64_broadcast_stride0", dl(code="int", bits=64, extents=(4, 3), strides=(0, 1)))
    write("dlpack", "i32_byte_offset", dl(code="int", bits=32, extents=(5,), strides=(1,), offset=8))
    write("dlpack", "scalar_legacy", dl(mode=1 | 16))
    write("dlpack", "empty_null_data", dl(mode=32, extents=(0, 7), strides=(7, 1)))
    write("dlpack", "cuda_host", dl(dev="cuda_host", extents=(2,), strides=(1,)))
    write("dlpack", "read_only_refused", dl(mode=2, extents=(2,), strides=(1,)))
    write("dlpack", "read_only_ok", dl(mode=2 | 4, extents=(2,), strides=(1,)))
    write("dlpack", "unknown_caller_flag", dl(mode=8, extents=(2,), strides=(1,), tail=bytes([5])))
    write("dlpack", "major_version_0", dl(mode=128, extents=(2,), strides=(1,), tail=bytes([0, 9])))
    write("dlpack", "misaligned", dl(mode=64, extents=(2,), strides=(1,), tail=bytes([2])))
    write("dlpack", "odd_byte_offset", dl(extents=(2,), strides=(1,), offset=3))
    write("dlpack", "f16_zero_copy", dl(bits=16, extents=(2,), strides=(1,)))
    write("dlpack", "bf16_zero_copy", dl(code="bfloat", bits=16, extents=(2,), strides=(1,)))
    write("dlpack", "lanes_4", dl(lanes=4, extents=(2,), strides=(1,)))
    write("dlpack", "cpu_device_5", dl(dev_id=0xC5, extents=(2,), strides=(1,)))
    write("dlpack", "cuda_absent", dl(dev="cuda", extents=(2,), strides=(1,)))
    write("dlpack", "opencl_foreign", dl(dev="opencl", extents=(2,), strides=(1,)))
    write("dlpack", "vulkan", dl(dev="vulkan", extents=(2,), strides=(1,)))
    write("dlpack", "negative_stride", dl(extents=(3,), strides=(-1,)))
    write("dlpack", "negative_extent", dl(extents=(-2,), strides=(1,)))
    write("dlpack", "nine_dims", dl(extents=(1,) * 9, strides=(1,) * 9))
    write("dlpack", "stride_wraps", dl(extents=(3, 3), strides=(1 << 62, 1)))
    write("dlpack", "huge_offset", dl(extents=(2,), strides=(1,), offset=(1 << 62) + 8))
    write("dlpack", "huge_extent_stride0", dl(extents=(1 << 40,), strides=(0,)))
    write("dlpack", "negative_ndim", dl(extents=(2,), strides=(1,))[:6] + bytes([0xFA]))


# ---- optim_state -----------------------------------------------------------

def optim_file(kind="AdamW", params=4, tensors=None, meta=None, step=3, drop=(), extra=None):
    """An optimizer state for the net: state.<i>.step and the kind's tensors."""
    shapes = [[3, 4], [3], [2, 3], [2]]
    names = ("exp_avg", "exp_avg_sq") if kind != "SGD" else ("momentum_buffer",)
    h, data = {}, b""
    for i, shape in enumerate(shapes):
        parts = [("step", "I64", [], struct.pack("<q", step))]
        n = 1
        for d in shape:
            n *= d
        parts += [(what, "F32", shape, values(n, "<f")) for what in names]
        for what, dtype, sh, raw in parts:
            name = f"state.{i}.{what}"
            if name in drop:
                continue
            h[name] = entry(dtype, sh, len(data), len(data) + len(raw))
            data += raw
    for name, (dtype, sh, raw) in (extra or {}).items():
        h[name] = entry(dtype, sh, len(data), len(data) + len(raw))
        data += raw
    m = {"format": "pt", "optimizer": kind, "params": str(params), "lr": "0.01", "weight_decay": "0.1",
         "schedule": "none"}
    m.update({"momentum": "0.9"} if kind == "SGD" else {"beta1": "0.9", "beta2": "0.95", "eps": "1e-08"})
    m.update(meta or {})
    h["__metadata__"] = {k: v for k, v in m.items() if v is not None}
    return st_file(json.dumps(h, separators=(",", ":")), data)


def optim_state_corpus():
    sched = {"schedule": "warmup_cosine", "warmup_steps": "2", "total_steps": "10", "min_lr": "0.001"}
    write("optim_state", "valid_adamw", optim_file())
    write("optim_state", "valid_adamw_schedule", optim_file(meta=sched))
    write("optim_state", "valid_sgd", optim_file("SGD"))
    write("optim_state", "valid_adam", optim_file("Adam"))
    write("optim_state", "valid_partial", optim_file(drop={"state.3.step", "state.3.exp_avg", "state.3.exp_avg_sq"}))
    write("optim_state", "step_huge", optim_file(step=(1 << 62)))
    write("optim_state", "step_zero", optim_file(step=0))
    write("optim_state", "missing_moment", optim_file(drop={"state.2.exp_avg_sq"}))
    write("optim_state", "tensor_without_step", optim_file(drop={"state.1.step"}))
    write("optim_state", "unexpected_tensor", optim_file(extra={"state.7.exp_avg": ("F32", [2], values(2, "<f"))}))
    write("optim_state", "step_f32", optim_file(drop={"state.0.step"}, extra={"state.0.step": ("F32", [], values(1, "<f"))}))
    write("optim_state", "step_out_of_range", optim_file(extra={"state.9.step": ("I64", [], struct.pack("<q", 1))}))
    write("optim_state", "params_mismatch", optim_file(params=6))
    write("optim_state", "params_huge", optim_file(meta={"params": "99999999999999999999"}))
    write("optim_state", "lr_negative", optim_file(meta={"lr": "-0.01"}))
    write("optim_state", "lr_nan", optim_file(meta={"lr": "nan"}))
    write("optim_state", "lr_text", optim_file(meta={"lr": "0.01x"}))
    write("optim_state", "beta_one", optim_file(meta={"beta2": "1"}))
    write("optim_state", "no_lr", optim_file(meta={"lr": None}))
    write("optim_state", "no_kind", optim_file(meta={"optimizer": None}))
    write("optim_state", "kind_unknown", optim_file(meta={"optimizer": "Lion"}))
    write("optim_state", "schedule_unknown", optim_file(meta={"schedule": "step"}))
    write("optim_state", "schedule_total_huge", optim_file(meta=dict(sched, total_steps="9223372036854775807")))
    write("optim_state", "schedule_min_lr_above", optim_file(meta=dict(sched, min_lr="1")))
    write("optim_state", "schedule_warmup_missing", optim_file(meta=dict(sched, warmup_steps=None)))
    write("optim_state", "weights_file", st_file(json.dumps(net_header()[0]), values(23, "<f")))


if __name__ == "__main__":
    for sub in ("safetensors", "calls", "calls-shapes", "dlpack", "optim_state"):
        os.makedirs(os.path.join(HERE, "corpus", sub), exist_ok=True)
    safetensors_corpus()
    calls_corpus()
    dlpack_corpus()
    optim_state_corpus()

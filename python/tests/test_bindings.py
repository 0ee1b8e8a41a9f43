"""The bindings are the headers': every exported function is bound, and the C
compiler accepts every declaration cffi was given as a redeclaration of the
header's (so return and parameter types, const and `...` are exact), with
struct sizes and enum values checked the same way."""
import os
import shutil
import subprocess
import tempfile

import pytest
from pycparser import c_ast, c_generator, c_parser

from portable import _ffi
from portable._ffi import ffi, lib
from conftest import REPO

_FfiError = (ValueError, TypeError, __import__("cffi").CDefError)  # opaque and function types have no size


# The standard types the generator leaves to cffi, for pycparser to parse the text.
_PRELUDE = ("typedef int int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t,"
            " uintptr_t, size_t, ptrdiff_t; typedef int bool;\n")


def _decls():
    """The function declarations (as C text) and enumerators cffi was given."""
    body = "\n".join(l for l in _ffi.cdef_text.splitlines() if not l.startswith(("#", "/*")))
    ast = c_parser.CParser().parse(_PRELUDE + body)
    gen = c_generator.CGenerator()
    funcs = {n.name: gen.visit(n) + ";" for n in ast.ext
             if isinstance(n, c_ast.Decl) and isinstance(n.type, c_ast.FuncDecl)}
    enums = []

    class Enumerators(c_ast.NodeVisitor):
        def visit_Enumerator(self, n):
            enums.append(n.name)

    Enumerators().visit(ast)
    return funcs, enums


def _exported():
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run([nm, "-D", "--defined-only", _ffi.library_path], capture_output=True, text=True,
                         check=True).stdout
    # names without their symbol version (pt_abs@@PORTABLE_0.1)
    return {parts[2].split("@")[0] for parts in (l.split() for l in out.splitlines())
            if len(parts) == 3 and parts[1] in "TW" and parts[2].startswith("pt_")}


def test_every_exported_function_is_bound_and_nothing_else():
    funcs, _ = _decls()
    exported = _exported()
    assert len(funcs) > 150
    assert sorted(exported - set(funcs)) == [], "exported by libportable.so but not bound"
    assert sorted(set(funcs) - exported) == [], "bound but not exported by libportable.so"
    for name in funcs:
        assert isinstance(getattr(lib, name), ffi.CData)


def test_signatures_structs_and_enums_match_the_headers_exactly():
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("no C compiler to check the declarations with")
    funcs, enums = _decls()
    lines = ["#include <portable/portable.h>", "#include <portable/dlpack.h>"]
    # pt_device_info and pt_memory_stats are also macros (passing sizeof *out
    # to the sized entry points): undefined here so the symbols are redeclared
    lines += [f"#undef {name}" for name in funcs]
    lines += funcs.values()  # a redeclaration that differs in any way is an error
    typedefs, structs, _ = ffi.list_types()
    for t in typedefs:
        if t in ("bool",):
            continue
        try:
            size = ffi.sizeof(t)
        except _FfiError:  # opaque handles (pt_tensor, pt_device): no size to compare
            continue
        lines.append(f'_Static_assert(sizeof({t}) == {size}, "sizeof({t})");')
    for s in structs:
        try:
            size = ffi.sizeof(f"struct {s}")
        except _FfiError:
            continue
        lines.append(f'_Static_assert(sizeof(struct {s}) == {size}, "sizeof(struct {s})");')
    for e in enums:
        lines.append(f'_Static_assert({e} == {int(getattr(lib, e))}, "{e}");')
    for name in ("PT_ALL", "PT_MAX_DIMS", "PT_DLPACK_READ_ONLY_OK"):
        lines.append(f'_Static_assert({name} == {int(getattr(lib, name))}, "{name}");')
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "check.c")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-fsyntax-only",
                            "-I", os.path.join(REPO, "include"),
                            "-I", os.path.join(REPO, "third_party", "dlpack", "include"), src],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    assert len(enums) > 50


def test_a_wrong_declaration_is_caught():
    """The check above can fail: a pt_sum without its dim (the NaN the issue
    met by hand) is rejected by the same compiler run."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        pytest.skip("no C compiler")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "bad.c")
        with open(src, "w") as f:
            f.write("#include <portable/portable.h>\npt_tensor *pt_sum(pt_tensor *x);\n")
        r = subprocess.run([cc, "-std=c11", "-fsyntax-only", "-I", os.path.join(REPO, "include"), src],
                           capture_output=True, text=True)
    assert r.returncode != 0 and "conflicting types" in r.stderr

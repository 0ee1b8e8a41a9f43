"""`python -m portable devices`: which file each plugin's dependencies were
loaded from, as `portable devices` prints it (tools/plugin_libraries.c).
The plugin's DT_NEEDED names come from its ELF file; where each was loaded
from, from the process itself (dl_iterate_phdr through ctypes)."""
import ctypes
import os
import struct
from typing import Dict, List

_RUNTIMES = ("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so", "libgcc_s.so",
             "libstdc++.so", "ld-linux")


def _needed(path: str) -> List[str]:
    """DT_NEEDED entries of a 64-bit little-endian ELF file, in order."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for s in sections:
        if s[1] != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[s[6]]  # sh_link: its string table
        names, off = [], s[4]
        while off + 16 <= s[4] + s[5]:
            tag, val = struct.unpack_from("<qQ", data, off)
            off += 16
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                start = strtab[4] + val
                names.append(data[start:data.index(b"\0", start)].decode())
        return names
    return []


class _PhdrInfo(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("name", ctypes.c_char_p),
                ("phdr", ctypes.c_void_p), ("phnum", ctypes.c_uint16)]


def _loaded() -> Dict[str, str]:
    """Basename of every loaded object, as it was opened -> its real path."""
    found: Dict[str, str] = {}
    callback_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_PhdrInfo), ctypes.c_size_t, ctypes.c_void_p)

    def visit(info, size, data):
        name = info.contents.name
        if name:
            path = name.decode(errors="replace")
            found.setdefault(os.path.basename(path), os.path.realpath(path))
        return 0

    libc = ctypes.CDLL(None)
    libc.dl_iterate_phdr(callback_t(visit), None)
    return found


def print_plugin_libraries(plugin_paths: List[tuple]) -> None:
    """plugin_paths: (backend name, plugin file) of every loaded plugin."""
    print("\nLibraries the plugins loaded")
    loaded = _loaded()
    shown = 0
    for name, path in plugin_paths:
        label = name
        if not path or os.path.realpath(path) not in loaded.values():
            continue  # listed by the loader, never opened
        try:
            needed = _needed(os.path.realpath(path))
        except OSError:
            continue
        for n in needed:
            if n.startswith(_RUNTIMES):
                continue
            print(f"  {label:<8} {n:<24} {loaded.get(n, '(not loaded)')}")
            label = ""
            shown += 1
    if not shown:
        print("  (no plugin loaded, or none depends on more than the C runtime)")

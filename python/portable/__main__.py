"""`python -m portable devices|version`: what the `portable` tool prints.

  devices   every backend with its load status (or why it failed) and every
            device with its properties (nvidia-smi and clinfo together)
  version   the loaded library's version
"""
from __future__ import annotations

import argparse
import os
import sys

from . import _device as _dev
from ._ffi import ffi, lib
from ._plugin_libraries import print_plugin_libraries
from .version import library_version

_TYPES = {0: "CPU", 1: "GPU", 2: "ACCEL"}
_RULE = ("+------------+------------------------------------------+-------+-----+------------+------------+"
         "------------+--------------------------+")


def _bytes(n: int) -> str:
    """The tool's size format: "unknown" below 0, one decimal from KiB up."""
    if n < 0:
        return "unknown"
    units, v, u = ("B", "KiB", "MiB", "GiB", "TiB"), float(n), 0
    while v >= 1024.0 and u < 4:
        v /= 1024.0
        u += 1
    return f"{v:.1f} {units[u]}" if u else f"{v:.0f} {units[u]}"


def _details(p: dict) -> None:
    """The tool's print_details: one "key: value" line per fact the backend reports."""
    rows = [("platform", p["platform"]), ("vendor", p["vendor"]), ("version", p["device_version"]),
            ("C version", p["c_version"])]
    if p["compute_capability"]:
        rows.append(("compute cap.", "%d.%d" % p["compute_capability"]))
    rows += [("UUID", p["uuid"]), ("PCI bus id", p["pci_bus_id"])]
    if p["max_alloc"] > 0:
        rows.append(("max allocation", _bytes(p["max_alloc"])))
    if p["local_memory"] > 0:
        rows.append(("local memory", _bytes(p["local_memory"])))
    if p["max_work_group"] > 0:
        rows.append(("max work-group", str(p["max_work_group"])))
    rows.append(("held by process", _bytes(p["memory_process"])))
    for key, value in rows:
        if value:
            print(f"|   {key + ':':<17}{value}")
    yes = lambda b: "yes" if b else "no"  # noqa: E731
    print(f"|   fp16: {yes(p['supports_f16'])}, fp64: {yes(p['supports_f64'])}")
    if p["extensions"]:
        print(f"|   {'extensions:':<17}{' '.join(p['extensions'])}")


def devices() -> int:
    print(f"libportable {library_version()}\n\nBackends")
    bs = _dev.backends()
    for b in bs:
        n = len(b["devices"])
        if b["available"]:
            print(f"  {b['name']:<8} ok, {n} device{'' if n == 1 else 's'}  ({b['path']})")
        else:
            print(f"  {b['name']:<8} unavailable: {b['reason']}")
    print("\nDevices")
    print(_RULE)
    print(f"| {'device':<10} | {'name':<40} | {'type':<5} | {'CUs':>3} | {'mem total':<10} | {'mem free':<10} "
          f"| {'in use':<10} | {'driver':<24} |")
    print(_RULE)
    shown = 0
    for b in bs:
        for d in b["devices"]:
            try:
                p = d.properties()
            except Exception as e:
                print(f"| {str(d):<10} | error: {e}")
                continue
            used = _dev.memory_stats(d)["reserved"]
            print(f"| {str(d):<10} | {p['name'][:40]:<40} | {_TYPES.get(p['type'], 'OTHER'):<5} "
                  f"| {p['compute_units']:>3} | {_bytes(p['memory_total']):>10} | {_bytes(p['memory_free']):>10} "
                  f"| {_bytes(used):>10} | {p['driver_version'][:24]:<24} |")
            _details(p)
            shown += 1
    if not shown:
        print("| (no devices)")
    print(_RULE)
    print("mem total, mem free: as each driver reports them (unknown: the driver has no query\n"
          "for it, e.g. OpenCL without AMD's extension); in use: memory libportable holds")
    print_plugin_libraries([(b["name"], b["path"]) for b in bs])
    env = os.environ.get("PORTABLE_BACKEND") or "auto"
    d = lib.pt_default_device()
    if d:
        print(f"\nDefault device (PORTABLE_BACKEND={env}): {ffi.string(lib.pt_device_name(d)).decode()}")
        return 0
    print(f"\nDefault device (PORTABLE_BACKEND={env}): none: {ffi.string(lib.pt_last_error()).decode()}")
    return 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m portable", description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", default="devices", choices=["devices", "version"])
    args = parser.parse_args(argv)
    if args.command == "version":
        print(f"libportable {library_version()}")
        return 0
    return devices()


if __name__ == "__main__":
    sys.exit(main())

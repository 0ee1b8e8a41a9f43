"""`portable devices` and `portable devices --json` against each other and
against what each backend must report (clinfo's and nvidia-smi's facts).

Usage: check_devices.py <portable> [cuda]   (cuda: a cuda device must be
listed, as on the CUDA simulator, with its compute capability, UUID, PCI bus
id and per-process memory)."""
import json
import re
import subprocess
import sys

tool = sys.argv[1]
want_cuda = len(sys.argv) > 2 and sys.argv[2] == "cuda"
failures = 0


def check(ok, what):
    global failures
    print(("ok:   " if ok else "FAIL: ") + what)
    failures += 0 if ok else 1


def run(*args):
    p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


rc, out, err = run("devices", "--json")
check(rc == 0, f"devices --json exits 0 (got {rc}; stderr: {err.strip()[:300]})")
doc = json.loads(out)
names = [b["name"] for b in doc["backends"]]
check("dist" not in names, f"libportable-dist is no backend: {names}")
check(all(b["path"] for b in doc["backends"]), "every backend listed has a plugin file")
devices = {d["device"]: d for b in doc["backends"] for d in b["devices"]}
check("cpu:0" in devices, f"cpu:0 is listed: {sorted(devices)}")

for name, d in devices.items():
    check("error" not in d, f"{name}: properties read ({d.get('error', '')})")
    if "error" in d:
        continue
    check(d["memory_process"] >= 0, f"{name}: memory held by this process {d['memory_process']}")
    check(isinstance(d["fp16"], bool) and isinstance(d["fp64"], bool), f"{name}: fp16/fp64 flags")
    if d["backend"] == "opencl":
        check(d["device_version"].startswith("OpenCL "), f"{name}: OpenCL version {d['device_version']!r}")
        check(d["c_version"].startswith("OpenCL C "), f"{name}: OpenCL C version {d['c_version']!r}")
        check(d["max_alloc"] > 0 and d["local_memory"] > 0 and d["max_work_group"] > 0,
              f"{name}: max allocation {d['max_alloc']}, local memory {d['local_memory']}, "
              f"max work-group {d['max_work_group']}")
        check(len(d["extensions"]) > 0 and all(e.startswith("cl_") for e in d["extensions"]),
              f"{name}: {len(d['extensions'])} extensions")
        check(d["fp16"] == ("cl_khr_fp16" in d["extensions"]), f"{name}: fp16 follows cl_khr_fp16")
    if d["backend"] == "cuda":
        check(re.fullmatch(r"\d+\.\d", d["compute_capability"] or "") is not None,
              f"{name}: compute capability {d['compute_capability']}")
        check(re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", d["uuid"])
              is not None, f"{name}: UUID {d['uuid']}")
        check(re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.0", d["pci_bus_id"]) is not None,
              f"{name}: PCI bus id {d['pci_bus_id']}")
        check(d["local_memory"] > 0 and d["max_work_group"] > 0,
              f"{name}: shared memory per block {d['local_memory']}, threads per block {d['max_work_group']}")

if want_cuda:
    cuda = [d for d in devices.values() if d.get("backend") == "cuda"]
    check(len(cuda) > 0, "a cuda device is listed")
    if cuda:  # the simulator's first device: compute capability 9.0
        check(cuda[0]["compute_capability"] == "9.0", f"the simulator says 9.0: {cuda[0]['compute_capability']}")

# the table says the same
rc, text, _ = run("devices")
check(rc == 0, "devices exits 0")
check("dist" not in re.findall(r"^  (\S+)", text, re.M), "the table lists no dist backend")
for name, d in devices.items():
    check(name in text, f"the table lists {name}")
    if d.get("c_version"):
        check(f"C version:       {d['c_version']}" in text, f"the table shows {name}'s OpenCL C version")
    if d.get("uuid"):
        check(f"UUID:            {d['uuid']}" in text, f"the table shows {name}'s UUID")
        check(f"PCI bus id:      {d['pci_bus_id']}" in text, f"the table shows {name}'s PCI bus id")
    if d.get("platform"):
        check(f"platform:        {d['platform']}" in text, f"the table shows {name}'s whole platform")

# each command's --help describes that command
helps = {c: run(c, "--help")[1] for c in ("devices", "bench", "version")}
check("--json" in helps["devices"] and "extensions" in helps["devices"], "devices --help names --json")
check("matmul" in helps["bench"] and "--json" not in helps["bench"], "bench --help describes bench")
check("version" in helps["version"] and "matmul" not in helps["version"], "version --help describes version")
check(len(set(helps.values())) == 3, "the three helps differ")
check(run("bench", "--json")[0] == 2, "bench --json is an error (exit 2)")

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)

#!/usr/bin/env python3
"""combine_results.py: bench_cuda's and bench_torch.py's figures side by side.

Reads the --json files of both benchmarks (either may be missing) and prints
one markdown table with ratios, then the targets of the CUDA backend's issue
as met / not met. A report, not a test: nothing here fails a build.

Usage: combine_results.py PORTABLE.json [TORCH.json] [--header TEXT]
"""
import json
import sys

# key, label, unit, higher_is_better, reference key in the libportable file
ROWS = [
    ("gemm_f32_{n}_tflops", "GEMM FP32 n={n}", "TFLOP/s", True, "cublas_gemm_f32_{n}_tflops"),
    ("gemm_tf32_{n}_tflops", "GEMM TF32 n={n}", "TFLOP/s", True, "cublas_gemm_tf32_{n}_tflops"),
]
FLAT = [
    ("add_64M_gbps", "add, 64M f32", "GB/s", True, "d2d_copy_64M_gbps"),
    ("d2d_copy_64M_gbps", "device-to-device copy, 64M f32", "GB/s", True, None),
    ("add10_enqueue_us", "add on 10 elements, enqueue", "us/op", False, None),
    ("add10_sync_us", "add on 10 elements + synchronize", "us/op", False, None),
    ("h2d_pageable_gbps", "host to device, pageable", "GB/s", True, "cuda_h2d_pageable_gbps"),
    ("d2h_pageable_gbps", "device to host, pageable", "GB/s", True, "cuda_d2h_pageable_gbps"),
    ("h2d_pinned_gbps", "host to device, pinned", "GB/s", True, "cuda_h2d_pinned_gbps"),
    ("d2h_pinned_gbps", "device to host, pinned", "GB/s", True, "cuda_d2h_pinned_gbps"),
    ("tour_matmul_big_cpu_ms", "tour: big matmul on cpu", "ms", False, None),
    ("tour_matmul_big_cuda_ms", "tour: big matmul on cuda", "ms", False, None),
    ("tour_matmul_100_cpu_ms", "tour: 100x100 matmul on cpu", "ms", False, None),
    ("tour_matmul_100_cuda_ms", "tour: 100x100 matmul on cuda", "ms", False, None),
    ("tour_norm_each_ms", "tour: 1000 norms, read each step", "ms", False, None),
    ("tour_norm_once_ms", "tour: 1000 norms, read once", "ms", False, None),
    ("tour_copy_sync_ms", "tour: 50 matmuls, waiting copies", "ms", False, None),
    ("tour_copy_async_ms", "tour: 50 matmuls, async pinned copies", "ms", False, None),
]


def load(path):
    if not path:
        return {}
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"combine_results: cannot read {path}: {e}", file=sys.stderr)
        return {}


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def ratio(a, b, higher_is_better):
    """a relative to b, as a percentage where 100% means equal and more is better for a."""
    if a is None or b is None or a == 0 or b == 0:
        return "-"
    return f"{100 * (a / b if higher_is_better else b / a):.0f}%"


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    header = None
    if "--header" in argv:
        header = argv[argv.index("--header") + 1]
        args = [a for a in args if a != header]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    pt = load(args[0])
    th = load(args[1] if len(args) > 1 else None)
    r_pt, r_th = pt.get("results", {}), th.get("results", {})
    if header:
        print(header)
    print(f"\nlibportable on {pt.get('device', '?')} (driver {pt.get('driver', '?')}); "
          f"PyTorch {th.get('torch', 'not run')} (CUDA {th.get('cuda', '-')}).\n")
    print("Ratios are libportable relative to the other column: 100% = as fast, above = faster.\n")
    print("| measurement | unit | libportable | underlying library | PyTorch | vs library | vs PyTorch |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    sizes = sorted({int(k.split("_")[2]) for k in r_pt if k.startswith("gemm_")} |
                   {int(k.split("_")[2]) for k in r_th if k.startswith("gemm_")})
    for n in sizes:
        for key, label, unit, hib, ref in ROWS:
            rows.append((key.format(n=n), label.format(n=n), unit, hib, ref.format(n=n)))
    rows += FLAT
    for key, label, unit, hib, ref in rows:
        a, t = r_pt.get(key), r_th.get(key)
        lib = r_pt.get(ref) if ref else None
        if key == "d2d_copy_64M_gbps":
            continue  # shown as the reference of the add row
        if a is None and t is None:
            continue
        lib_label = fmt(lib)
        if ref == "d2d_copy_64M_gbps":
            lib_label = f"{fmt(lib)} (copy)"
        print(f"| {label} | {unit} | {fmt(a)} | {lib_label} | {fmt(t)} | {ratio(a, lib, hib)} | {ratio(a, t, hib)} |")

    print("\n### Targets\n")
    checks = []
    for n in sizes:
        if n >= 4096:
            a, b = r_pt.get(f"gemm_f32_{n}_tflops"), r_pt.get(f"cublas_gemm_f32_{n}_tflops")
            if a and b:
                checks.append((f"pt_matmul FP32 n={n} >= 95% of cuBLAS", a / b >= 0.95, f"{100 * a / b:.1f}%"))
            a, b = r_pt.get(f"gemm_tf32_{n}_tflops"), r_pt.get(f"cublas_gemm_tf32_{n}_tflops")
            if a and b:
                checks.append((f"pt_matmul TF32 n={n} >= 95% of cuBLAS", a / b >= 0.95, f"{100 * a / b:.1f}%"))
    a, b = r_pt.get("add_64M_gbps"), r_pt.get("d2d_copy_64M_gbps")
    if a and b:
        checks.append(("add >= 85% of device-to-device copy bandwidth", a / b >= 0.85, f"{100 * a / b:.1f}%"))
    a, b = r_pt.get("add10_enqueue_us"), r_th.get("add10_enqueue_us")
    if a and b:
        checks.append(("pt_add enqueue overhead below PyTorch's", a < b, f"{a:.2f} us vs {b:.2f} us"))
    print("| target | met | figure |\n|---|---|---|")
    for name, ok, fig in checks:
        print(f"| {name} | {'yes' if ok else 'NO'} | {fig} |")
    if not checks:
        print("| (no figures) | - | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""combine_results.py: bench_cuda's and bench_torch.py's figures side by side.

Reads the --json files of both benchmarks (either may be missing) and of
bench_opencl (--opencl, optional) and prints one markdown table with ratios
(--part table), then the CUDA backend's acceptance targets as met / not met
(--part targets); both by default. Every target is listed, with "not
measured" where a figure is missing. A report, not a test: nothing here fails
a build.

Usage: combine_results.py PORTABLE.json [TORCH.json] [--opencl OPENCL.json]
                          [--part table|targets|both] [--header TEXT]
"""
import argparse
import json
import sys

# key, label, unit, higher_is_better, reference key in the libportable file
ROWS = [
    ("gemm_f32_{n}_tflops", "GEMM FP32 n={n}", "TFLOP/s", True, "cublas_gemm_f32_{n}_tflops"),
    ("gemm_tf32_{n}_tflops", "GEMM TF32 n={n}", "TFLOP/s", True, "cublas_gemm_tf32_{n}_tflops"),
    ("gemm_bf16_{n}_tflops", "GEMM BF16 n={n}", "TFLOP/s", True, "cublas_gemm_bf16_{n}_tflops"),
]
FLAT = [
    ("add_64M_gbps", "add, 64M f32", "GB/s", True, "d2d_copy_64M_gbps"),
    ("d2d_copy_64M_gbps", "device-to-device copy, 64M f32", "GB/s", True, None),
    ("sum_64M_gbps", "sum, 64M f32 (bytes read)", "GB/s", True, "read_bw_64M_gbps"),
    ("sum_256M_gbps", "sum, 256M f32 (bytes read)", "GB/s", True, "read_bw_256M_gbps"),
    ("add10_enqueue_500_us", "add on 10 elements, 500 ops, enqueue", "us/op", False, None),
    ("add10_enqueue_sync_500_us", "add on 10 elements, 500 ops + one synchronize", "us/op", False, None),
    ("add10_enqueue_20000_us", "add on 10 elements, 20000 ops, enqueue", "us/op", False, None),
    ("add10_enqueue_sync_20000_us", "add on 10 elements, 20000 ops + one synchronize", "us/op", False, None),
    ("add10_sync_us", "add on 10 elements, synchronize after each", "us/op", False, None),
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


def print_table(r_pt, r_th, sizes):
    print("| measurement | unit | libportable | underlying library | PyTorch | vs library | vs PyTorch |")
    print("|---|---|---|---|---|---|---|")
    rows = []
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
        elif ref and ref.startswith("read_bw_"):
            lib_label = f"{fmt(lib)} (read bandwidth)"
        print(f"| {label} | {unit} | {fmt(a)} | {lib_label} | {fmt(t)} | {ratio(a, lib, hib)} | {ratio(a, t, hib)} |")


def at_least(name, a, b, threshold, why_missing):
    """A target "a / b >= threshold" as (name, met, figure)."""
    if not a:
        return (name, "-", "not measured (no libportable figure)")
    if not b:
        return (name, "-", f"not measured ({why_missing})")
    return (name, "yes" if a / b >= threshold else "NO", f"{100 * a / b:.1f}%")


def targets(r_pt, r_th, cl):
    """Every target of the CUDA backend, measured or not."""
    r_cl = cl.get("results", {})
    no_cublas = "no cuBLAS/cudart figure"
    no_torch = "no PyTorch figure"
    rows = []
    for n in (4096, 8192):
        a = r_pt.get(f"gemm_f32_{n}_tflops")
        rows.append(at_least(f"pt_matmul FP32 n={n} >= 97% of cublasSgemm", a,
                             r_pt.get(f"cublas_gemm_f32_{n}_tflops"), 0.97, no_cublas))
    for math, lib in (("tf32", "cublasSgemm, TF32 tensor-op math"),
                      ("bf16", "cublasGemmEx, bf16 in/out, 32F compute")):
        for n in (4096, 8192):
            a = r_pt.get(f"gemm_{math}_{n}_tflops")
            rows.append(at_least(f"pt_matmul {math.upper()} n={n} >= 95% of {lib}", a,
                                 r_pt.get(f"cublas_gemm_{math}_{n}_tflops"), 0.95, no_cublas))
            torch_what = "allow_tf32=True" if math == "tf32" else "bf16"
            rows.append(at_least(f"pt_matmul {math.upper()} n={n} >= 95% of torch.mm ({torch_what})", a,
                                 r_th.get(f"gemm_{math}_{n}_tflops"), 0.95, no_torch))
    rows.append(at_least("pt_add 64M f32 >= 90% of device-to-device copy bandwidth (bytes read + written)",
                         r_pt.get("add_64M_gbps"), r_pt.get("d2d_copy_64M_gbps"), 0.90, no_cublas))
    for n in (64, 256):
        rows.append(at_least(f"pt_sum {n}M f32 >= 85% of read bandwidth (faster of cublasSasum and a copy)",
                             r_pt.get(f"sum_{n}M_gbps"), r_pt.get(f"read_bw_{n}M_gbps"), 0.85, no_cublas))
    for k in (500, 20000):
        a = r_pt.get(f"add10_enqueue_{k}_us")
        name = f"pt_add on 10 elements <= 3 us of host time per op ({k} ops, enqueue only" + \
            ("; past the launch queue's depth, so the device's rate too)" if k > 1000 else ")")
        floor = r_pt.get(f"empty_launch_{k}_us")
        why = f" (an empty kernel's cuLaunchKernel alone: {floor:.2f} us)" if a is not None and floor else ""
        rows.append((name, "-", "not measured") if a is None else
                    (name, "yes" if a <= 3.0 else "NO", f"{a:.2f} us{why}"))
        t = r_th.get(f"add10_enqueue_{k}_us")
        name = f"pt_add on 10 elements below PyTorch's a + b ({k} ops, enqueue only)"
        rows.append((name, "-", f"not measured ({no_torch if a else 'no libportable figure'})") if not a or not t else
                    (name, "yes" if a < t else "NO", f"{a:.2f} us vs {t:.2f} us"))
    rows.append(at_least("pt_to_async to the cpu >= 90% of cudaMemcpyAsync into one reused pinned buffer",
                         r_pt.get("d2h_pinned_gbps"), r_pt.get("cuda_d2h_pinned_gbps"), 0.90, no_cublas))
    # OpenCL on the same GPU: CLBlast (what the opencl plugin calls) against
    # cuBLAS at the sizes both benchmarks ran. No threshold was set: reported.
    cl_sizes = sorted(int(k.split("_")[2]) for k in r_cl if k.startswith("clblast_sgemm_"))
    both = [n for n in cl_sizes if r_pt.get(f"cublas_gemm_f32_{n}_tflops")]
    for n in both:
        clb = r_cl[f"clblast_sgemm_{n}_gflops"] / 1e3
        cu = r_pt[f"cublas_gemm_f32_{n}_tflops"]
        platform = cl.get("platform", "OpenCL").split(" (")[0]
        rows.append((f"CLBlast SGEMM ({platform}) / cublasSgemm, n={n}", "no threshold",
                     f"{100 * clb / cu:.1f}% ({clb:.1f} vs {cu:.1f} TFLOP/s)"))
    if not both:
        why = "no bench_opencl figures" if not cl_sizes else "no cublasSgemm figure at the same n"
        rows.append(("CLBlast SGEMM (OpenCL on the same GPU) / cublasSgemm", "-", f"not measured ({why})"))
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("portable")
    ap.add_argument("torch", nargs="?")
    ap.add_argument("--opencl")
    ap.add_argument("--part", choices=("table", "targets", "both"), default="both")
    ap.add_argument("--header")
    args = ap.parse_args(argv[1:])
    pt = load(args.portable)
    th = load(args.torch)
    cl = load(args.opencl)
    r_pt, r_th = pt.get("results", {}), th.get("results", {})
    if args.header:
        print(args.header)
    if args.part in ("table", "both"):
        print(f"\nlibportable on {pt.get('device', '?')} (driver {pt.get('driver', '?')}); "
              f"PyTorch {th.get('torch', 'not run')} (CUDA {th.get('cuda', '-')}).\n")
        print("Ratios are libportable relative to the other column: 100% = as fast, above = faster.\n")
        sizes = sorted({int(k.split("_")[2]) for k in r_pt if k.startswith("gemm_")} |
                       {int(k.split("_")[2]) for k in r_th if k.startswith("gemm_")})
        print_table(r_pt, r_th, sizes)
    if args.part in ("targets", "both"):
        if args.part == "both":
            print("\n### Targets\n")
        print(f"libportable on {pt.get('device', '?')}; PyTorch {th.get('torch', 'not run')}; "
              f"OpenCL: {cl.get('device', 'not run')}. Each ratio is of two contenders in one process, "
              "alternated round by round, except those against PyTorch (its own process, same GPU, "
              "same method) and CLBlast (bench_opencl, same GPU).\n")
        print("| target | met | figure |\n|---|---|---|")
        for name, ok, fig in targets(r_pt, r_th, cl):
            print(f"| {name} | {ok} | {fig} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

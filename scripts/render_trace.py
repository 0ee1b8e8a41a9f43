#!/usr/bin/python3
"""Renders a libportable trace (PORTABLE_TRACE=file.json) as a timeline image.

    scripts/render_trace.py TRACE.json OUT.png|OUT.svg [--title TEXT] [--stats]

One pair of rows per device, as Perfetto shows them: the host's calls
(ops, copies, allocations, waits; nested calls drawn thinner) and the
device's queue (spans timed by the backend). Colours follow the span's
name, so the same op has the same colour on every row. --stats prints how
many spans were drawn per row (the tests compare it with the trace).

Debian's python3-matplotlib (scripts/install-deps.sh) draws it; the
interpreter is /usr/bin/python3 so a pyenv or venv python without it is not
picked up by accident."""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WAIT_COLOUR = "#9e9e9e"
ALLOC_COLOUR = "#d7ccc8"


def load_rows(path):
    """Returns (device names by pid, host spans, device spans, flows), times in us."""
    with open(path) as f:
        trace = json.load(f)
    names, host, device, flow_start, flow_end = {}, [], [], {}, {}
    open_spans = {}
    for e in trace["traceEvents"]:
        ph, pid = e.get("ph"), e.get("pid")
        if ph == "M" and e.get("name") == "process_name":
            names[pid] = e["args"]["name"]
        elif ph == "B":
            stack = open_spans.setdefault((pid, e.get("tid")), [])
            stack.append(e)
        elif ph == "E":
            stack = open_spans.get((pid, e.get("tid")))
            if stack:
                b = stack.pop()
                host.append((pid, b["ts"], e["ts"] - b["ts"], b["name"], b.get("cat", ""), len(stack)))
        elif ph == "X" and e.get("cat") == "device":  # pt_trace_span's rows are not the queue
            device.append((pid, e["ts"], e["dur"], e["name"]))
        elif ph == "s":
            flow_start[e["id"]] = (pid, e["ts"])
        elif ph == "f":
            flow_end[e["id"]] = (pid, e["ts"])
    flows = [(flow_start[i], flow_end[i]) for i in flow_end if i in flow_start]
    return names, host, device, flows


def colour_of(name, cat, palette):
    if name == "synchronize" or cat == "wait":
        return WAIT_COLOUR
    if cat == "memory":
        return ALLOC_COLOUR
    if name not in palette:
        palette[name] = plt.cm.tab20(len(palette) % 20)
    return palette[name]


def render(path, out, title=None):
    names, host, device, flows = load_rows(path)
    pids = sorted(set(names) | {h[0] for h in host} | {d[0] for d in device})
    if not pids:
        raise SystemExit(f"render_trace: {path} has no spans")
    t0 = min([h[1] for h in host] + [d[1] for d in device])
    ms = lambda us: (us - t0) / 1000.0  # noqa: E731
    # Rows from the top: device 0 host, device 0 queue, device 1 host, ...
    y_host = {pid: 2 * (len(pids) - 1 - i) + 1 for i, pid in enumerate(pids)}
    y_queue = {pid: y_host[pid] - 1 for pid in pids}
    fig, ax = plt.subplots(figsize=(10, 1.1 + 0.9 * len(pids)), dpi=100)
    palette, counts = {}, {}
    for pid, ts, dur, name, cat, depth in host:
        h = 0.8 if depth == 0 else 0.4
        ax.broken_barh([(ms(ts), dur / 1000.0)], (y_host[pid] - h / 2, h),
                       facecolors=colour_of(name, cat, palette), edgecolor="black", linewidth=0.2)
        counts[(pid, "host")] = counts.get((pid, "host"), 0) + 1
    for pid, ts, dur, name in device:
        ax.broken_barh([(ms(ts), dur / 1000.0)], (y_queue[pid] - 0.4, 0.8),
                       facecolors=colour_of(name, "device", palette), edgecolor="black", linewidth=0.2)
        counts[(pid, "queue")] = counts.get((pid, "queue"), 0) + 1
    for (spid, sts), (fpid, fts) in flows:
        ax.annotate("", xy=(ms(fts), y_queue[fpid] + 0.4), xytext=(ms(sts), y_host[spid] - 0.4),
                    arrowprops=dict(arrowstyle="-", color="#455a64", linewidth=0.3, alpha=0.5))
    ticks, labels = [], []
    for pid in pids:
        name = names.get(pid, f"pid {pid}")
        ticks += [y_host[pid], y_queue[pid]]
        labels += [f"{name} host", f"{name} queue"]
    ax.set_yticks(ticks, labels)
    ax.set_xlabel("ms since the first span")
    ax.set_ylim(-0.7, 2 * len(pids) - 0.3)
    ax.grid(axis="x", linewidth=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in palette.values()]
    handles += [plt.Rectangle((0, 0), 1, 1, color=WAIT_COLOUR)]
    ax.legend(handles, list(palette) + ["synchronize"], fontsize=7, ncol=min(6, len(handles)),
              loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(pids) < 2 else -0.2), frameon=False)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out)
    return names, counts


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("out", help="image file; .png or .svg picks the format")
    p.add_argument("--title")
    p.add_argument("--stats", action="store_true", help="print the spans drawn per row")
    a = p.parse_args()
    names, counts = render(a.trace, a.out, a.title)
    if a.stats:
        for (pid, row), n in sorted(counts.items()):
            print(f"{names.get(pid, pid)} {row} {n}")


if __name__ == "__main__":
    sys.exit(main())

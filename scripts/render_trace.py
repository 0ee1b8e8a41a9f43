#!/usr/bin/python3
"""Renders a libportable trace (PORTABLE_TRACE=file.json) as a timeline image.

    scripts/render_trace.py TRACE.json OUT.png|OUT.svg [--title TEXT] [--stats]

Rows per device, as Perfetto shows them: the host's calls (ops, copies,
allocations, waits; nested calls drawn thinner), the device's queue (spans
timed by the backend), and below them each row of pt_trace_span spans
(libportable-dist's collectives and DDP buckets, the application's own). Colours follow the span's
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
    """Returns (device names by pid, host spans, device spans, flows, span rows), times in us;
    span rows maps (pid, row name) to its pt_trace_span spans."""
    with open(path) as f:
        trace = json.load(f)
    names, host, device, flow_start, flow_end = {}, [], [], {}, {}
    row_names, spans = {}, {}
    open_spans = {}
    for e in trace["traceEvents"]:
        ph, pid = e.get("ph"), e.get("pid")
        if ph == "M" and e.get("name") == "process_name":
            names[pid] = e["args"]["name"]
        elif ph == "M" and e.get("name") == "thread_name":
            row_names[(pid, e.get("tid"))] = e["args"]["name"]
        elif ph == "B":
            stack = open_spans.setdefault((pid, e.get("tid")), [])
            stack.append(e)
        elif ph == "E":
            stack = open_spans.get((pid, e.get("tid")))
            if stack:
                b = stack.pop()
                host.append((pid, b["ts"], e["ts"] - b["ts"], b["name"], b.get("cat", ""), len(stack)))
        elif ph == "X" and e.get("cat") == "device":
            device.append((pid, e["ts"], e["dur"], e["name"]))
        elif ph == "X":  # pt_trace_span: a row of its own, not the queue
            row = row_names.get((pid, e.get("tid")), f"row {e.get('tid')}")
            spans.setdefault((pid, row), []).append((e["ts"], e["dur"], e["name"]))
        elif ph == "s":
            flow_start[e["id"]] = (pid, e["ts"])
        elif ph == "f":
            flow_end[e["id"]] = (pid, e["ts"])
    flows = [(flow_start[i], flow_end[i]) for i in flow_end if i in flow_start]
    return names, host, device, flows, spans


def colour_of(name, cat, palette):
    if name == "synchronize" or cat == "wait":
        return WAIT_COLOUR
    if cat == "memory":
        return ALLOC_COLOUR
    if name not in palette:
        palette[name] = plt.cm.tab20(len(palette) % 20)
    return palette[name]


def render(path, out, title=None):
    names, host, device, flows, spans = load_rows(path)
    pids = sorted(set(names) | {h[0] for h in host} | {d[0] for d in device} | {k[0] for k in spans})
    if not pids:
        raise SystemExit(f"render_trace: {path} has no spans")
    t0 = min([h[1] for h in host] + [d[1] for d in device] + [s[0] for v in spans.values() for s in v])
    ms = lambda us: (us - t0) / 1000.0  # noqa: E731
    # Rows from the top: device 0 host, its queue, its span rows, device 1 host, ...
    order = []
    for pid in pids:
        order += [(pid, "host"), (pid, "queue")] + sorted(k for k in spans if k[0] == pid)
    y_of = {key: len(order) - 1 - i for i, key in enumerate(order)}
    y_host = {pid: y_of[(pid, "host")] for pid in pids}
    y_queue = {pid: y_of[(pid, "queue")] for pid in pids}
    fig, ax = plt.subplots(figsize=(10, 1.1 + 0.45 * len(order)), dpi=100)
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
    for (pid, row), items in spans.items():
        for ts, dur, name in items:
            ax.broken_barh([(ms(ts), dur / 1000.0)], (y_of[(pid, row)] - 0.4, 0.8),
                           facecolors=colour_of(name, "user", palette), edgecolor="black", linewidth=0.2)
        counts[(pid, row)] = len(items)
    for (spid, sts), (fpid, fts) in flows:
        ax.annotate("", xy=(ms(fts), y_queue[fpid] + 0.4), xytext=(ms(sts), y_host[spid] - 0.4),
                    arrowprops=dict(arrowstyle="-", color="#455a64", linewidth=0.3, alpha=0.5))
    ax.set_yticks([y_of[k] for k in order], [f"{names.get(pid, f'pid {pid}')} {row}" for pid, row in order])
    ax.set_xlabel("ms since the first span")
    ax.set_ylim(-0.7, len(order) - 0.3)
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

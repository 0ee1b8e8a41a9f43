#!/usr/bin/python3
"""Pictures beside the numbers.

    bench/plot_results.py tables FILE.md...           # draw each table's ratios, link them
    bench/plot_results.py tables --check FILE.md...   # every ratio table has its picture
    bench/plot_results.py losses OUT.png LOG...       # --loss-log files as loss curves

tables: in a results report (bench/results/*.md), every markdown table with a
ratio column (a header naming a ratio, speed-up, "vs" or "a / b") is drawn as
horizontal bars per row with a line at 1.0, into <report>-t<N>.png beside the
report, and an image link to it is put right under the table (once; running
again redraws the picture and keeps the link). Rows whose ratio is not a
number ("-", "not installed") are left out of the picture.

losses: each file holds "epoch step loss" lines, as cnn_digits --loss-log
writes them; each file is one curve over its steps, in file order.

Prints what it drew (tables: file, rows and columns per picture; losses:
points per curve), which the tests compare with what they expect. Debian's
python3-matplotlib draws (scripts/install-deps.sh)."""
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RATIO_HEADER = re.compile(r"ratio|speed-?up|\bvs\b|\S / \S|×", re.IGNORECASE)
NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*[x×]?\s*$")


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables_of(lines):
    """Yields (first line index, last line index, heading) per markdown table."""
    heading, i = "", 0
    while i < len(lines):
        if lines[i].startswith("#"):
            heading = lines[i].lstrip("#").strip()
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[\s:|-]+\|\s*$", lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            yield i, j - 1, heading
            i = j
            continue
        i += 1


def ratios_of(lines, first, last):
    """(column names, [(row label, [value or None per column])]) of a table's ratio columns."""
    header = cells(lines[first])
    rows = [cells(lines[k]) for k in range(first + 2, last + 1)]
    cols = []
    for c, name in enumerate(header):
        if c == 0 or not RATIO_HEADER.search(name):
            continue
        if any(c < len(r) and NUMBER.match(r[c]) for r in rows):
            cols.append(c)
    data = []
    for r in rows:
        values = [float(NUMBER.match(r[c]).group(1)) if c < len(r) and NUMBER.match(r[c]) else None for c in cols]
        if any(v is not None for v in values):
            data.append((r[0][:48], values))
    return [header[c] for c in cols], data


def draw(path, heading, names, data):
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.32 * len(data) * max(1, len(names))), dpi=80)
    height = 0.8 / len(names)
    for k, name in enumerate(names):
        ys = [i + k * height for i in range(len(data))]
        xs = [row[1][k] if row[1][k] is not None else 0 for row in data]
        ax.barh(ys, xs, height=height, label=name)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([i + height * (len(names) - 1) / 2 for i in range(len(data))], [r[0] for r in data], fontsize=7)
    ax.invert_yaxis()
    ax.set_title(heading[:90], fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def tables(paths, check):
    missing = 0
    for md in paths:
        with open(md) as f:
            lines = f.read().split("\n")
        stem = os.path.splitext(os.path.basename(md))[0]
        out, n, last_copied = [], 0, 0
        for first, last, heading in list(tables_of(lines)):
            names, data = ratios_of(lines, first, last)
            out += lines[last_copied:last + 1]
            last_copied = last + 1
            if not data:
                continue
            n += 1
            png = f"{stem}-t{n}.png"
            link = f"![ratios: {heading}]({png})" if heading else f"![ratios]({png})"
            linked = last + 2 < len(lines) and lines[last + 2].startswith("![") and f"({png})" in lines[last + 2]
            if check:
                if not linked or not os.path.exists(os.path.join(os.path.dirname(md), png)):
                    print(f"{md}: the table at line {first + 1} has no picture {png} under it")
                    missing += 1
                continue
            draw(os.path.join(os.path.dirname(md), png), heading, names, data)
            print(f"{png}: {len(data)} rows x {len(names)} ratio columns")
            if not linked:
                out += ["", link]
        out += lines[last_copied:]
        if not check:
            with open(md, "w") as f:
                f.write("\n".join(out))
    return 1 if missing else 0


def losses(out, logs):
    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=80)
    for log in logs:
        ys = []
        with open(log) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    ys.append(float(parts[2]))
        if not ys:
            raise SystemExit(f"plot_results: {log} has no 'epoch step loss' lines")
        ax.plot(range(len(ys)), ys, linewidth=0.8, label=os.path.basename(log))
        print(f"{os.path.basename(log)}: {len(ys)} points")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.grid(linewidth=0.3)
    fig.tight_layout()
    fig.savefig(out)
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "tables":
        check = "--check" in argv
        return tables([a for a in argv[1:] if a != "--check"], check)
    if len(argv) >= 3 and argv[0] == "losses":
        return losses(argv[1], argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

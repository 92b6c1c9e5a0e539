"""`python -m analysis.crossval draw`: the cross-validation of the virtual-time lane, from the snapshots in
data/crossval/<run>/<paper>.json and the comparisons config/crossval.yaml lists, into figures/crossval/:
crossval.md and .csv (every cell and metric of every comparison, both runs' statistic, the
difference against the trials' spread) and crossval.png (the differences relative to the first
run's value, each cell's noise a grey band)."""
from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.crossval import metrics as crossval

STATUS_STYLE = {"within spread": ("#2ca02c", "o"), "explained": ("#ff7f0e", "s"),
                "beyond spread": ("#d62728", "X"), "wider spread": ("#9467bd", "P"),
                "no spread known": ("#7f7f7f", "D")}


def _fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def table(blocks: list[tuple[dict, str, dict, dict, list[crossval.Row]]]) -> str:
    runs, rule = crossval.config()["runs"], crossval.config()["wider_spread"]
    lines = ["# Cross-validation of the virtual-time lane (UML)", "",
             "The same cells, five trials each, in two runs; each side the papers' statistic (drop the",
             "highest and lowest trial, average the rest) and its range (max - min over the trials). A",
             "difference is *within spread* when it is no larger than the larger range; beyond that it is",
             "explained in config/crossval.yaml or listed as *beyond spread*. A cell whose second run",
             f"spreads far wider than its first (more than {rule['ratio']} times the range and",
             f"{rule['share_of_mean']:.0%} of the mean) is *wider spread* unless explained: its trials do",
             "something the first run's did not. Built by `make crossval` (analysis/crossval/,",
             "figures/crossval/). The runs:", ""]
    lines += [f"- `{k}`: {v}" for k, v in runs.items()] + [""]
    for comp, paper, a, b, rows in blocks:
        counts: dict[str, int] = {}
        for r in rows:
            counts[r.status] = counts.get(r.status, 0) + 1
        lines += [f"## {comp['name']}: {paper} (`{comp['a']}` against `{comp['b']}`)", "", comp["title"] + ".", "",
                  f"- `{comp['a']}`: {', '.join(a['kernels'])}; {a['source']}",
                  f"- `{comp['b']}`: {', '.join(b['kernels'])}; {b['source']}",
                  "- " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), "",
                  ("**Holds**: every difference is within the trials' spread or explained." if crossval.holds(rows)
                   else f"**Does not hold**: {sum(r.status not in crossval.HOLDING for r in rows)} of {len(rows)} "
                   "differences are neither within the trials' spread nor explained."), ""]
        spec = crossval.config()["papers"][paper]
        if comp["name"] == "substrate" and spec.get("reference_lane"):
            named = spec["reference_lane"]
            lines += [f"**Reference lane: {named['lane']}.** {named['why'].strip()}", ""]
        note = (spec.get("notes") or {}).get(comp["name"])
        lines += [note.strip(), ""] if note else []
        lines += [f"| cell | metric | {comp['a']} | range | {comp['b']} | range | difference | % | status |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            rel = "–" if r.rel is None else f"{100 * r.rel:+.2f}"
            lines.append(f"| {r.cell} | {r.metric} | {_fmt(r.a)} | {_fmt(r.a_range)} | {_fmt(r.b)} | "
                         f"{_fmt(r.b_range)} | {r.diff:+.2f} | {rel} | {r.status}{': ' + r.why if r.why else ''} |")
        lines.append("")
    return "\n".join(lines)


def figure(blocks: list[tuple[dict, str, dict, dict, list[crossval.Row]]], out: Path) -> None:
    fig, axes = plt.subplots(len(blocks), 1, figsize=(11, 3.2 * len(blocks)), squeeze=False)
    for ax, (comp, paper, _, _, rows) in zip(axes[:, 0], blocks, strict=True):
        mine = [r for r in rows if r.a]
        for i, r in enumerate(mine):
            if r.noise is not None:
                band = 100 * r.noise / abs(r.a)
                ax.fill_between([i - 0.35, i + 0.35], -band, band, color="#cccccc", lw=0)
            color, marker = STATUS_STYLE[r.status]
            ax.plot(i, 100 * r.diff / abs(r.a), marker=marker, color=color, ls="none")
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xticks(range(len(mine)), [f"{r.cell}\n{r.metric}" for r in mine], rotation=90, fontsize=6)
        ax.set_ylabel(f"{comp['b']} - {comp['a']}\n% of {comp['a']}", fontsize=8)
        ax.set_title(f"{comp['name']}: {paper} (grey: the larger trial range)", fontsize=9)
    handles = [plt.Line2D([], [], color=c, marker=m, ls="none", label=s) for s, (c, m) in STATUS_STYLE.items()]
    fig.legend(handles=handles, loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "crossval.png", dpi=120)
    fig.savefig(out / "crossval.pdf", metadata={"CreationDate": None, "ModDate": None})
    plt.close(fig)


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    blocks = crossval.comparisons()
    rows = [r for *_, rs in blocks for r in rs]
    (out / "crossval.md").write_text(table(blocks) + "\n")
    with (out / "crossval.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(crossval.rows_as_dicts(rows)[0]) if rows else ["comparison"])
        w.writeheader()
        w.writerows(crossval.rows_as_dicts(rows))
    if blocks:
        figure(blocks, out)
    print(f"crossval: {len(rows)} comparisons in {len(blocks)} blocks into {out}")

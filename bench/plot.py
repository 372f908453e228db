"""Render benchmark figures (bench/results/latest.json) as an SVG bar chart for the docs."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "latest.json"
CHART = ROOT / "docs" / "img" / "benchmark.svg"

BARS = [
    ("raw_ceiling", "raw SQL ceiling", "#9e9e9e"),
    ("drain_async", "drain, async task", "#3f51b5"),
    ("drain_sync", "drain, sync task", "#7986cb"),
    ("raw_copy", "raw COPY (enqueue floor)", "#9e9e9e"),
    ("bulk_enqueue", "bulk enqueue", "#009688"),
]


def render(figures: dict[str, float], title: str) -> str:
    width, bar_height, gap, left = 720, 34, 14, 170
    top = 50
    height = top + len(BARS) * (bar_height + gap) + 30
    largest = max(figures[key] for key, _, _ in BARS)
    scale = (width - left - 120) / largest
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="14" role="img" aria-label="{title}">',
        f'<text x="10" y="28" font-size="16" font-weight="bold">{title}</text>',
    ]
    for index, (key, label, colour) in enumerate(BARS):
        y = top + index * (bar_height + gap)
        length = max(1, figures[key] * scale)
        parts += [
            f'<text x="{left - 10}" y="{y + 22}" text-anchor="end">{label}</text>',
            f'<rect x="{left}" y="{y}" width="{length:.0f}" height="{bar_height}" '
            f'fill="{colour}"/>',
            f'<text x="{left + length + 8:.0f}" y="{y + 22}">{figures[key]:,.0f} jobs/s</text>',
        ]
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> None:
    results = json.loads(RESULTS.read_text())
    title = (
        f"{results['jobs']:,} no-op jobs, {results['processes']} processes x "
        f"{results['concurrency']}, {results['cpus']} cores"
    )
    CHART.parent.mkdir(parents=True, exist_ok=True)
    CHART.write_text(render(results["figures"], title))
    print(f"wrote {CHART}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Render benchmark figures (bench/results/latest.json) as an SVG chart for the docs.

Two panels, each on its own scale: draining jobs beside the raw-SQL ceiling, and bulk enqueue
beside a raw COPY.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "latest.json"
CHART = ROOT / "docs" / "img" / "benchmark.svg"

PANELS = [
    (
        "Drain (claim, run, complete)",
        [
            ("raw_ceiling", "raw SQL ceiling", "#9e9e9e"),
            ("drain_async", "async task", "#3f51b5"),
            ("drain_sync", "sync task", "#7986cb"),
        ],
    ),
    (
        "Bulk enqueue",
        [
            ("raw_copy", "raw COPY", "#9e9e9e"),
            ("bulk_enqueue", "enqueue_many", "#009688"),
        ],
    ),
]
WIDTH, LEFT, BAR, GAP = 720, 150, 30, 10


def render(figures: dict[str, float], title: str) -> str:
    parts, y = [], 30
    parts.append(f'<text x="10" y="{y}" font-size="16" font-weight="bold">{title}</text>')
    y += 20
    for heading, bars in PANELS:
        y += 22
        parts.append(f'<text x="10" y="{y}" font-weight="bold">{heading}</text>')
        y += 10
        scale = (WIDTH - LEFT - 130) / max(figures[key] for key, _, _ in bars)
        for key, label, colour in bars:
            length = max(1.0, figures[key] * scale)
            parts += [
                f'<text x="{LEFT - 8}" y="{y + 20}" text-anchor="end">{label}</text>',
                f'<rect x="{LEFT}" y="{y}" width="{length:.0f}" height="{BAR}" fill="{colour}"/>',
                f'<text x="{LEFT + length + 8:.0f}" y="{y + 20}">{figures[key]:,.0f} jobs/s</text>',
            ]
            y += BAR + GAP
    header = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{y + 10}" '
        f'font-family="sans-serif" font-size="14" role="img" aria-label="{title}">'
    )
    return "\n".join([header, *parts, "</svg>"]) + "\n"


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

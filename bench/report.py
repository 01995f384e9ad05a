"""The RESULT lines of the benchmarks and the table ``python -m bench`` prints from them.

Every benchmark module prints, besides its human text, one line per figure::

    RESULT {"figure": "...", "value": 838.0, "unit": "req/s", "goal": 800, "better": "higher",
            "baseline": null, "ratio": null}

``goal`` and ``baseline`` may be null; ``ratio`` is value/baseline when a baseline was measured in the same run.
``emit()`` prints such a line; ``parse()`` reads them back from a module's output; ``table()`` formats them.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

PREFIX = "RESULT "


@dataclass(frozen=True)
class Result:
    figure: str
    value: float
    unit: str
    goal: float | None
    better: str  # "higher" or "lower"
    baseline: float | None = None
    ratio: float | None = None

    def __post_init__(self) -> None:
        if self.better not in {"higher", "lower"}:
            raise ValueError(f"{self.figure}: better must be 'higher' or 'lower', not {self.better!r}")
        for name in ("value", "goal", "baseline", "ratio"):
            number = getattr(self, name)
            if number is not None and (isinstance(number, bool) or not math.isfinite(number)):
                raise ValueError(f"{self.figure}: {name} must be a finite number, not {number!r}")

    @property
    def met(self) -> bool | None:
        """Whether the goal is met; None when the figure has no goal."""
        if self.goal is None:
            return None
        return self.value >= self.goal if self.better == "higher" else self.value <= self.goal


def emit(
    figure: str,
    value: float,
    unit: str,
    *,
    better: str,
    goal: float | None = None,
    baseline: float | None = None,
) -> Result:
    """Print the RESULT line of one figure (ratio = value/baseline when a baseline is given) and return it."""
    ratio = value / baseline if baseline else None
    result = Result(figure, float(value), unit, goal, better, baseline, ratio)
    print(PREFIX + json.dumps(asdict(result), separators=(", ", ": ")), flush=True)
    return result


def parse(output: str) -> list[Result]:
    """Every RESULT line of ``output``; a malformed one raises ValueError naming it."""
    results = []
    for line in output.splitlines():
        if not line.startswith(PREFIX):
            continue
        try:
            fields = json.loads(line[len(PREFIX) :])
            results.append(
                Result(
                    figure=str(fields["figure"]),
                    value=fields["value"],
                    unit=str(fields["unit"]),
                    goal=fields.get("goal"),
                    better=fields["better"],
                    baseline=fields.get("baseline"),
                    ratio=fields.get("ratio"),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"malformed RESULT line {line!r}: {exc}") from None
    return results


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    text = f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}" if value else "0"
    return f"{text} {unit}".strip()


def table(rows: list[tuple[str, Result]]) -> str:
    """The table figure | value | goal | met | ratio of (module, result) pairs, as aligned plain text."""
    header = ("figure", "value", "goal", "met", "ratio")
    lines = [header]
    for module, result in rows:
        goal = (
            "-" if result.goal is None else f"{'>=' if result.better == 'higher' else '<='} {_number(result.goal)}"
        )
        met = {None: "-", True: "yes", False: "NO"}[result.met]
        ratio = "-" if result.ratio is None else f"{result.ratio:.3f}"
        lines.append((f"{module}: {result.figure}", _number(result.value, result.unit), goal, met, ratio))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    rendered = [" | ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in lines]
    rendered.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in rendered)

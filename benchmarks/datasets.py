"""Which long-conversation benchmark a path holds, read into bench_recall's Dataset.

`locomo`: LoCoMo's single JSON file (a list of samples, benchmarks/locomo.py). `realtalk`: one REALTALK
chat file or a folder of them (benchmarks/realtalk.py). `auto` tells them apart by their shape.
"""

import json
from pathlib import Path

from benchmarks import locomo, realtalk
from benchmarks.locomo import Dataset

FORMATS = ("auto", "locomo", "realtalk")


def dataset_read(path: str | Path, fmt: str = "auto") -> Dataset:
    """Raises FileNotFoundError for a missing path and ValueError (or KeyError/TypeError from a file
    that does not hold what its format promises) for data that is not in the format."""
    path = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if not path.exists():
        raise FileNotFoundError(f"no such dataset file or folder: {path}")
    if fmt == "auto":
        fmt = _format_of(path)
    if fmt == "realtalk":
        return realtalk.dataset_load(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder; LoCoMo's format is one file (locomo10.json)")
    return locomo.dataset_load(path)


def _format_of(path: Path) -> str:
    if path.is_dir():
        return "realtalk"
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if realtalk.is_realtalk(data):
        return "realtalk"
    if isinstance(data, list):
        return "locomo"
    raise ValueError(f"{path.name}: neither LoCoMo's format (a list of samples) nor REALTALK's")

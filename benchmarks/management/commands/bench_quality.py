"""Retrieval quality on the labelled sets (benchmarks/data/quality*.json): recall@5, recall@10 and
MRR of our search next to a plain BM25 baseline (rank-bm25's BM25Okapi) on the same entries.

Each file is its own corpus, loaded into its own project, so adding a set never changes the figures
of another. quality.json reports its groups unprefixed ("all", "kind=...", "lang=..."); any other
file names its group at the top ("group": "...") and its rows carry that name as a prefix."""

import json
import re
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from benchmarks.migrated import ensure_migrated
from search.selectors import SearchFilters, SearchScope, search_run
from vault.models import Agent, Project, VaultEntry

DATA = Path(__file__).resolve().parents[2] / "data"
QUALITY = DATA / "quality.json"
PROJECT = "bench-quality"
TOKEN = re.compile(r"\w+")


def data_files() -> list[Path]:
    """Every labelled set, the original quality.json first."""
    return sorted(DATA.glob("quality*.json"), key=lambda path: (path != QUALITY, path.name))


def _load(data: dict, slug: str = PROJECT) -> dict[int, str]:
    """(Re)create the benchmark project with the labelled entries; returns entry id -> key."""
    with transaction.atomic():
        Project.objects.filter(slug=slug).delete()
        project = Project.objects.create(slug=slug, name=f"Quality benchmark {data.get('group', '')}".strip())
        agents = {
            slug: Agent.objects.create(project=project, slug=slug, name=slug)
            for slug in sorted({e["agent"] for e in data["entries"]})
        }
        now = timezone.now()
        rows = []
        for e in data["entries"]:
            when = now - timedelta(days=e.get("age_days", 0))
            rows.append(
                VaultEntry(
                    project=project,
                    agent=agents[e["agent"]],
                    category=e["category"],
                    content=e["content"],
                    tags=e.get("tags", []),
                    importance=e.get("importance", 0.5),
                    created_at=when,
                    updated_at=when,
                    legacy_id=e["key"],
                    created_by="bench_quality",
                )
            )
        created = VaultEntry.objects.bulk_create(rows)
    return project, {entry.pk: entry.legacy_id for entry in created}


def _metrics(ranked: list[str], answers: set[str]) -> tuple[float, float, float]:
    def recall(k):
        return len(answers & set(ranked[:k])) / len(answers)

    rr = next((1.0 / (i + 1) for i, key in enumerate(ranked) if key in answers), 0.0)
    return recall(5), recall(10), rr


class Command(BaseCommand):
    help = "Measure recall@5, recall@10 and MRR of search vs a BM25 baseline on the labelled quality set."

    def add_arguments(self, parser):
        parser.add_argument("--keep", action="store_true", help="Keep the bench-quality projects afterwards.")
        parser.add_argument("--show-misses", action="store_true", help="Print questions our search misses.")
        parser.add_argument(
            "--data",
            action="append",
            type=Path,
            help="Labelled set to run (repeatable); default: every benchmarks/data/quality*.json.",
        )

    def handle(self, *args, **options):
        ensure_migrated(self)
        totals = defaultdict(lambda: {"ours": [0.0, 0.0, 0.0], "bm25": [0.0, 0.0, 0.0], "n": 0})
        misses = []
        for path in options["data"] or data_files():
            data = json.loads(path.read_text())
            misses += self._run(data, totals, keep=options["keep"])
        self.stdout.write(
            f"{'group':<34}{'n':>5}  {'R@5 ours/bm25':>16}  {'R@10 ours/bm25':>16}  {'MRR ours/bm25':>16}"
        )
        for group, b in totals.items():
            n = b["n"]
            cells = "  ".join(f"{b['ours'][i] / n:>7.3f}/{b['bm25'][i] / n:<7.3f}" for i in range(3))
            self.stdout.write(f"{group:<34}{n:>5}  {cells}")
        if options["show_misses"]:
            for question, top in misses:
                self.stdout.write(
                    f"MISS [{question['kind']}/{question['lang']}] {question['q']!r} want {question['answers']} got {top}"
                )

    def _run(self, data: dict, totals: dict, keep: bool) -> list:
        """Ask one labelled set's questions of its own project; adds its groups to totals in order."""
        from rank_bm25 import BM25Okapi

        group = data.get("group")
        project, keys = _load(data, f"{PROJECT}-{group}" if group else PROJECT)
        entries = data["entries"]
        bm25 = BM25Okapi(
            [TOKEN.findall((e["content"] + " " + " ".join(e.get("tags", []))).lower()) for e in entries]
        )
        mine = defaultdict(lambda: {"ours": [0.0, 0.0, 0.0], "bm25": [0.0, 0.0, 0.0], "n": 0})
        misses = []
        took = []
        for question in data["questions"]:
            answers = set(question["answers"])
            outcome = search_run(
                q=question["q"],
                scope=SearchScope(project.pk, None),
                filters=SearchFilters(kinds=("entries",), limit=10),
            )
            took.append(outcome.took_ms)
            ours = [keys[row["id"]] for row in outcome.results]
            scores = bm25.get_scores(TOKEN.findall(question["q"].lower()))
            order = sorted(range(len(entries)), key=lambda i: -scores[i])
            baseline = [entries[i]["key"] for i in order[:10] if scores[i] > 0]
            m_ours, m_bm25 = _metrics(ours, answers), _metrics(baseline, answers)
            if m_ours[1] < 1.0:
                misses.append((question, ours[:3]))
            for name in ("all", f"kind={question['kind']}", f"lang={question['lang']}"):
                bucket = mine[name]
                bucket["n"] += 1
                for i in range(3):
                    bucket["ours"][i] += m_ours[i]
                    bucket["bm25"][i] += m_bm25[i]
        self.stdout.write(
            f"{group or 'quality'}: {len(data['questions'])} questions over {len(entries)} entries "
            f"(search p50 {sorted(took)[len(took) // 2]:.1f} ms)"
        )
        for name in ["all"] + sorted(k for k in mine if k != "all"):
            label = name if not group else group if name == "all" else f"{group} {name}"
            totals[label] = mine[name]
        if not keep:
            project.delete()
        return misses

"""Retrieval quality on the labelled set (benchmarks/data/quality.json): recall@5, recall@10 and
MRR of our search next to a plain BM25 baseline (rank-bm25's BM25Okapi) on the same entries."""

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

QUALITY = Path(__file__).resolve().parents[2] / "data" / "quality.json"
PROJECT = "bench-quality"
TOKEN = re.compile(r"\w+")


def _load(data: dict) -> dict[int, str]:
    """(Re)create the benchmark project with the labelled entries; returns entry id -> key."""
    with transaction.atomic():
        Project.objects.filter(slug=PROJECT).delete()
        project = Project.objects.create(slug=PROJECT, name="Quality benchmark")
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
        parser.add_argument("--keep", action="store_true", help="Keep the bench-quality project afterwards.")
        parser.add_argument("--show-misses", action="store_true", help="Print questions our search misses.")

    def handle(self, *args, **options):
        ensure_migrated(self)
        from rank_bm25 import BM25Okapi

        data = json.loads(QUALITY.read_text())
        project, keys = _load(data)
        entries = data["entries"]
        bm25 = BM25Okapi(
            [TOKEN.findall((e["content"] + " " + " ".join(e.get("tags", []))).lower()) for e in entries]
        )
        totals = defaultdict(lambda: {"ours": [0.0, 0.0, 0.0], "bm25": [0.0, 0.0, 0.0], "n": 0})
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
            for group in ("all", f"kind={question['kind']}", f"lang={question['lang']}"):
                bucket = totals[group]
                bucket["n"] += 1
                for i in range(3):
                    bucket["ours"][i] += m_ours[i]
                    bucket["bm25"][i] += m_bm25[i]
        self.stdout.write(
            f"{len(data['questions'])} questions over {len(entries)} entries "
            f"(search p50 {sorted(took)[len(took) // 2]:.1f} ms)"
        )
        self.stdout.write(
            f"{'group':<22}{'n':>5}  {'R@5 ours/bm25':>16}  {'R@10 ours/bm25':>16}  {'MRR ours/bm25':>16}"
        )
        order = ["all"] + sorted(k for k in totals if k != "all")
        for group in order:
            b = totals[group]
            n = b["n"]
            cells = "  ".join(f"{b['ours'][i] / n:>7.3f}/{b['bm25'][i] / n:<7.3f}" for i in range(3))
            self.stdout.write(f"{group:<22}{n:>5}  {cells}")
        if options["show_misses"]:
            for question, top in misses:
                self.stdout.write(
                    f"MISS [{question['kind']}/{question['lang']}] {question['q']!r} want {question['answers']} got {top}"
                )
        if not options["keep"]:
            project.delete()

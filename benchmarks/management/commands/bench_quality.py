"""Retrieval quality on the labelled sets (benchmarks/data/quality*.json): recall@5, recall@10 and
MRR of our search next to a plain BM25 baseline (rank-bm25's BM25Okapi) on the same entries.

Each file is its own corpus, loaded into its own project, so adding a set never changes the figures
of another. quality.json reports its groups unprefixed ("all", "kind=...", "lang=..."); any other
file names its group at the top ("group": "...") and its rows carry that name as a prefix.

Every search mode available is measured (`--mode`): lexical always; semantic and hybrid when
embeddings are on and the database has pgvector, after the loaded entries are embedded with the
configured model (synchronously, as `embed_backfill` would: every item still waiting to be embedded
in the database is embedded, so run it on its own data folder)."""

import json
import re
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from benchmarks.migrated import ensure_migrated
from search.embedding_index import embeddings_refresh
from search.fusion import MODES
from search.selectors import SearchFilters, SearchScope, search_run
from search.semantic import semantic_enabled, semantic_status
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
        parser.add_argument(
            "--mode",
            default="",
            help="Comma list of search modes to measure (hybrid, lexical, semantic); default: every mode "
            "available here (lexical only without embeddings or pgvector).",
        )

    def handle(self, *args, **options):
        ensure_migrated(self)
        modes = self._modes(options["mode"])
        totals = {
            mode: defaultdict(lambda: {"ours": [0.0, 0.0, 0.0], "bm25": [0.0, 0.0, 0.0], "n": 0})
            for mode in modes
        }
        misses = []
        for path in options["data"] or data_files():
            data = json.loads(path.read_text())
            misses += self._run(data, totals, modes, keep=options["keep"])
        for mode in modes:
            self.stdout.write(f"\nmode={mode}")
            self.stdout.write(
                f"{'group':<34}{'n':>5}  {'R@5 ours/bm25':>16}  {'R@10 ours/bm25':>16}  {'MRR ours/bm25':>16}"
            )
            for group, b in totals[mode].items():
                n = b["n"]
                cells = "  ".join(f"{b['ours'][i] / n:>7.3f}/{b['bm25'][i] / n:<7.3f}" for i in range(3))
                self.stdout.write(f"{group:<34}{n:>5}  {cells}")
        if options["show_misses"]:
            for mode, question, top in misses:
                self.stdout.write(
                    f"MISS {mode} [{question['kind']}/{question['lang']}] {question['q']!r} "
                    f"want {question['answers']} got {top}"
                )

    def _modes(self, asked: str) -> list[str]:
        available = list(MODES) if semantic_enabled() else ["lexical"]
        if not asked.strip():
            modes = available
        else:
            modes = [mode.strip() for mode in asked.split(",") if mode.strip()]
            unknown = [mode for mode in modes if mode not in MODES]
            if unknown:
                raise CommandError(f"Unknown mode(s) {', '.join(unknown)}; use {', '.join(MODES)}.")
        missing = [mode for mode in modes if mode not in available]
        if missing:
            detail = semantic_status(with_pending=False).get("detail", "semantic search is off")
            self.stderr.write(f"mode {', '.join(missing)} not available, skipped: {detail}")
            modes = [mode for mode in modes if mode in available]
        if not modes:
            raise CommandError("No mode left to measure.")
        return modes

    def _run(self, data: dict, totals: dict, modes: list[str], keep: bool) -> list:
        """Ask one labelled set's questions of its own project in each mode; adds its groups to
        totals in order."""
        from rank_bm25 import BM25Okapi

        group = data.get("group")
        project, keys = _load(data, f"{PROJECT}-{group}" if group else PROJECT)
        if any(mode != "lexical" for mode in modes):
            embedded = embeddings_refresh()
            self.stdout.write(f"{group or 'quality'}: embedded {embedded.embedded} items")
        entries = data["entries"]
        bm25 = BM25Okapi(
            [TOKEN.findall((e["content"] + " " + " ".join(e.get("tags", []))).lower()) for e in entries]
        )
        baselines = {}
        for question in data["questions"]:
            scores = bm25.get_scores(TOKEN.findall(question["q"].lower()))
            order = sorted(range(len(entries)), key=lambda i: -scores[i])
            baselines[question["q"]] = [entries[i]["key"] for i in order[:10] if scores[i] > 0]
        misses = []
        for mode in modes:
            mine = defaultdict(lambda: {"ours": [0.0, 0.0, 0.0], "bm25": [0.0, 0.0, 0.0], "n": 0})
            took = []
            for question in data["questions"]:
                answers = set(question["answers"])
                outcome = search_run(
                    q=question["q"],
                    scope=SearchScope(project.pk, None),
                    filters=SearchFilters(kinds=("entries",), limit=10, mode=mode),
                )
                took.append(outcome.took_ms)
                ours = [keys[row["id"]] for row in outcome.results]
                m_ours, m_bm25 = _metrics(ours, answers), _metrics(baselines[question["q"]], answers)
                if m_ours[1] < 1.0:
                    misses.append((mode, question, ours[:3]))
                for name in ("all", f"kind={question['kind']}", f"lang={question['lang']}"):
                    bucket = mine[name]
                    bucket["n"] += 1
                    for i in range(3):
                        bucket["ours"][i] += m_ours[i]
                        bucket["bm25"][i] += m_bm25[i]
            self.stdout.write(
                f"{group or 'quality'} mode={mode}: {len(data['questions'])} questions over {len(entries)} "
                f"entries (search p50 {sorted(took)[len(took) // 2]:.1f} ms)"
            )
            for name in ["all"] + sorted(k for k in mine if k != "all"):
                label = name if not group else group if name == "all" else f"{group} {name}"
                totals[mode][label] = mine[name]
        if not keep:
            project.delete()
        return misses

"""Synthetic memory corpus for the search latency benchmark.

Latency numbers are only meaningful if the index sees text shaped like real agent memory:
a wide technical vocabulary (so one common term matches a few percent of rows, not half of
them), two languages (the English and Portuguese text-search configurations tokenise
differently), markdown task lists, handoff transcripts and hashtags. The text is composed
from templates and slot lists instead of being stored, so a million rows cost no disk and
are reproducible from a seed. Everything is precomputed at import time because the
generator must produce 1,000,000 entries in well under a minute.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

CATEGORIES = ("decisions", "lessons", "tasks", "projects", "handoffs")

# The slot vocabularies and sentence templates are data: benchmarks/data/corpus_vocabulary.json.
_VOCABULARY = json.loads(
    (Path(__file__).parent / "data" / "corpus_vocabulary.json").read_text(encoding="utf-8")
)
TECH = tuple(_VOCABULARY["slots"]["TECH"])
SERVICES = tuple(_VOCABULARY["slots"]["SERVICES"])
THINGS_EN = tuple(_VOCABULARY["slots"]["THINGS_EN"])
THINGS_PT = tuple(_VOCABULARY["slots"]["THINGS_PT"])
BUGS_EN = tuple(_VOCABULARY["slots"]["BUGS_EN"])
BUGS_PT = tuple(_VOCABULARY["slots"]["BUGS_PT"])
PEOPLE = tuple(_VOCABULARY["slots"]["PEOPLE"])
CLIENTS = tuple(_VOCABULARY["slots"]["CLIENTS"])
TESTS = tuple(_VOCABULARY["slots"]["TESTS"])
PROJECTS = tuple(_VOCABULARY["slots"]["PROJECTS"])
TEAMS = tuple(_VOCABULARY["slots"]["TEAMS"])
ENVS_EN = tuple(_VOCABULARY["slots"]["ENVS_EN"])
ENVS_PT = tuple(_VOCABULARY["slots"]["ENVS_PT"])
REGIONS = tuple(_VOCABULARY["slots"]["REGIONS"])
METRICS_EN = tuple(_VOCABULARY["slots"]["METRICS_EN"])
METRICS_PT = tuple(_VOCABULARY["slots"]["METRICS_PT"])
TAGS = tuple(_VOCABULARY["slots"]["TAGS"])
REASONS_EN = tuple(_VOCABULARY["slots"]["REASONS_EN"])
REASONS_PT = tuple(_VOCABULARY["slots"]["REASONS_PT"])
CAUSES_EN = tuple(_VOCABULARY["slots"]["CAUSES_EN"])
CAUSES_PT = tuple(_VOCABULARY["slots"]["CAUSES_PT"])
FIXES_EN = tuple(_VOCABULARY["slots"]["FIXES_EN"])
FIXES_PT = tuple(_VOCABULARY["slots"]["FIXES_PT"])
QUESTIONS_EN = tuple(_VOCABULARY["slots"]["QUESTIONS_EN"])
QUESTIONS_PT = tuple(_VOCABULARY["slots"]["QUESTIONS_PT"])
ANSWERS_EN = tuple(_VOCABULARY["slots"]["ANSWERS_EN"])
ANSWERS_PT = tuple(_VOCABULARY["slots"]["ANSWERS_PT"])
TEMPLATES = {
    lang: {category: tuple(texts) for category, texts in by_category.items()}
    for lang, by_category in _VOCABULARY["templates"].items()
}

_LISTS = {
    "en": {
        "tech": TECH,
        "svc": SERVICES,
        "thing": THINGS_EN,
        "bug": BUGS_EN,
        "person": PEOPLE,
        "client": CLIENTS,
        "test": TESTS,
        "project": PROJECTS,
        "team": TEAMS,
        "env": ENVS_EN,
        "region": REGIONS,
        "metric": METRICS_EN,
        "tag": TAGS,
        "reason": REASONS_EN,
        "cause": CAUSES_EN,
        "fix": FIXES_EN,
    },
    "pt": {
        "tech": TECH,
        "svc": SERVICES,
        "thing": THINGS_PT,
        "bug": BUGS_PT,
        "person": PEOPLE,
        "client": CLIENTS,
        "test": TESTS,
        "project": PROJECTS,
        "team": TEAMS,
        "env": ENVS_PT,
        "region": REGIONS,
        "metric": METRICS_PT,
        "tag": TAGS,
        "reason": REASONS_PT,
        "cause": CAUSES_PT,
        "fix": FIXES_PT,
    },
}
_QUESTIONS = {"en": QUESTIONS_EN, "pt": QUESTIONS_PT}
_ANSWERS = {"en": ANSWERS_EN, "pt": ANSWERS_PT}
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_SENTENCE_COUNTS = (1, 2, 2, 3, 3, 3, 4, 4, 5)
_TOKEN = re.compile(r"\w+")


def _make_filler(rng: random.Random, lang: str) -> type[dict]:
    """Build a dict type whose missing keys are drawn at random on first use.

    ``str.format_map`` then fills a template in C with one Python call per slot, and a slot used
    twice in a sentence (``{svc}`` in a question and its answer) keeps one value.
    """
    rand = rng.random
    pickers = {}
    for name, values in _LISTS[lang].items():
        pickers[name] = lambda seq=values, k=len(values): seq[int(rand() * k)]
    pickers["n"] = lambda: str(int(rand() * rand() * 400) + 2)
    pickers["ms"] = lambda: str(50 * (int(rand() * 60) + 1))
    pickers["pct"] = lambda: str(int(rand() * 95) + 3)
    pickers["ver"] = lambda: f"{int(rand() * 9)}.{int(rand() * 20)}.{int(rand() * 12)}"
    pickers["date"] = lambda: f"{_MONTHS[int(rand() * 12)]} {int(rand() * 28) + 1}"
    pickers["date_pt"] = lambda: f"{int(rand() * 28) + 1:02d}/{int(rand() * 12) + 1:02d}"
    pickers["time"] = lambda: f"{int(rand() * 24):02d}:{int(rand() * 60):02d}"
    questions, answers = _QUESTIONS[lang], _ANSWERS[lang]

    class Filler(dict):
        __slots__ = ()

        def __missing__(self, key: str) -> str:
            if key == "question":
                value = questions[int(rand() * len(questions))].format_map(self)
            elif key == "answer":
                value = answers[int(rand() * len(answers))].format_map(self)
            else:
                picker = pickers.get(key) or pickers[key.rstrip("0123456789")]
                value = picker()
            self[key] = value
            return value

    return Filler


def corpus_generate(n: int, *, agents: int = 50, seed: int = 0) -> Iterator[dict]:
    """Yield ``n`` memory entries, identical for identical arguments.

    Agent ids are skewed (a few agents write most entries, as in real deployments) but every
    agent appears once ``n`` is a few thousand; roughly a third of agents write in Portuguese.
    """
    rng = random.Random(seed)
    rand = rng.random
    fillers = {lang: _make_filler(rng, lang) for lang in ("en", "pt")}
    agent_names = [f"agent-{i:02d}" for i in range(agents)]
    # Agents with index % 3 == 1 mostly write Portuguese, others mostly English.
    pt_share = [0.85 if i % 3 == 1 else 0.1 for i in range(agents)]
    templates = TEMPLATES
    n_tags = len(TAGS)
    counts = _SENTENCE_COUNTS
    for _ in range(n):
        a = int(agents * rand() ** 1.6)
        lang = "pt" if rand() < pt_share[a] else "en"
        category = CATEGORIES[int(rand() * 5)]
        pool = templates[lang][category]
        k = len(pool)
        filler = fillers[lang]
        sep = "\n" if category == "tasks" else " "
        parts = []
        length = 0
        target = counts[int(rand() * 9)]
        while (len(parts) < target or length < 150) and length < 600:
            s = pool[int(rand() * k)].format_map(filler())
            parts.append(s)
            length += len(s) + 1
        r = rand()
        tags = [TAGS[int(rand() * n_tags)] for _ in range(int(r * 4))]
        content = sep.join(parts)
        if r > 0.7:
            content += "\n" + " ".join("#" + t for t in tags)
        yield {
            "agent": agent_names[a],
            "category": category,
            "content": content,
            "tags": list(dict.fromkeys(tags)),
            "age_days": round(400 * rand() ** 2, 3),
            "importance": round(0.2 + 0.7 * rand(), 2),
        }


def _typo(rng: random.Random, text: str) -> str:
    words = text.split(" ")
    idx = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not idx:
        return text
    i = rng.choice(idx)
    w = words[i]
    p = rng.randrange(1, len(w) - 1)
    op = rng.randrange(3)
    if op == 0:  # deletion
        w = w[:p] + w[p + 1 :]
    elif op == 1:  # transposition
        w = w[:p] + w[p + 1] + w[p] + w[p + 2 :]
    else:  # substitution with a neighbouring letter
        w = w[:p] + ("e" if w[p] != "e" else "a") + w[p + 1 :]
    words[i] = w
    return " ".join(words)


def corpus_queries(n: int, *, seed: int = 1) -> list[str]:
    """Return ``n`` queries shaped like what agents send: mostly questions, some keyword bags,
    a few typos; every word except the typo'd one occurs in the corpus vocabulary."""
    rng = random.Random(seed)
    fillers = {lang: _make_filler(rng, lang) for lang in ("en", "pt")}
    out = []
    for _ in range(n):
        lang = "pt" if rng.random() < 0.35 else "en"
        lists = _LISTS[lang]
        r = rng.random()
        if r < 0.5:
            q = rng.choice(_QUESTIONS[lang]).format_map(fillers[lang]())
        elif r < 0.8:
            keys = rng.sample(
                ("tech", "svc", "thing", "bug", "client", "metric", "project"), rng.randint(2, 3)
            )
            q = " ".join(rng.choice(lists[k]) for k in keys)
        elif r < 0.9:
            q = rng.choice(lists[rng.choice(("tech", "svc", "client", "thing", "bug"))])
        else:
            q = _typo(rng, rng.choice(_QUESTIONS[lang]).format_map(fillers[lang]()))
        out.append(q)
    return out


def corpus_vocabulary() -> set[str]:
    """Lower-cased word tokens the generator can emit (numbers excluded), for query checks."""
    texts = []
    for lang in ("en", "pt"):
        for pool in TEMPLATES[lang].values():
            texts.extend(pool)
        texts.extend(_QUESTIONS[lang])
        texts.extend(_ANSWERS[lang])
        for values in _LISTS[lang].values():
            texts.extend(values)
    texts.append(" ".join(_MONTHS))
    vocab = set()
    for t in texts:
        t = re.sub(r"\{[a-z_0-9]+\}", " ", t)
        vocab.update(w for w in _TOKEN.findall(t.lower()) if not any(c.isdigit() for c in w))
    return vocab

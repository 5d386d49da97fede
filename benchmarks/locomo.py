"""Long-conversation recall data (LoCoMo's format) and its metrics, for `bench_recall`.

LoCoMo (github.com/snap-research/LoCoMo, data/locomo10.json, CC BY-NC 4.0: evaluation only, never
committed) holds conversations between two speakers in dated sessions, and questions whose evidence
turns are labelled (`D<session>:<turn>`). Each turn becomes one message "<speaker>: <text>" (a shared
photo adds its caption), posted with the session's date. A question is answered well when its
evidence turns come back near the top of `/search`.

The BM25 baseline ranks the same turn texts with rank-bm25 over Snowball English stems, stopwords
removed: the textbook method our search has to beat on the same data in the same run.
"""

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TURN_SPACING = timedelta(seconds=30)

# NLTK's English stopword list (the usual one for BM25 baselines).
STOPWORDS = frozenset(
    [
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "you're",
        "you've",
        "you'll",
        "you'd",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "she's",
        "her",
        "hers",
        "herself",
        "it",
        "it's",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "that'll",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "a",
        "an",
        "the",
        "and",
        "but",
        "if",
        "or",
        "because",
        "as",
        "until",
        "while",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "don't",
        "should",
        "should've",
        "now",
        "d",
        "ll",
        "m",
        "o",
        "re",
        "ve",
        "y",
        "ain",
        "aren",
        "aren't",
        "couldn",
        "couldn't",
        "didn",
        "didn't",
        "doesn",
        "doesn't",
        "hadn",
        "hadn't",
        "hasn",
        "hasn't",
        "haven",
        "haven't",
        "isn",
        "isn't",
        "ma",
        "mightn",
        "mightn't",
        "mustn",
        "mustn't",
        "needn",
        "needn't",
        "shan",
        "shan't",
        "shouldn",
        "shouldn't",
        "wasn",
        "wasn't",
        "weren",
        "weren't",
        "won",
        "won't",
        "wouldn",
        "wouldn't",
    ]
)
_TOKEN = re.compile(r"\w+(?:'\w+)?")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_RANGE = re.compile(r"D:?(\d+):(\d+)\s*-\s*D?:?(\d+):(\d+)")
MAX_RANGE = 50  # a longer "range" is taken as its two ends, not expanded
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})", re.IGNORECASE)
_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        1,
    )
}


@dataclass
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    when: datetime

    @property
    def document(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclass
class Question:
    text: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]

    def sessions(self) -> dict[int, list[Turn]]:
        grouped: dict[int, list[Turn]] = {}
        for turn in self.turns:
            grouped.setdefault(turn.session, []).append(turn)
        return grouped


@dataclass
class Dataset:
    conversations: list[Conversation]
    evidence_fixed: int = 0  # malformed ids that were understood (`D8:6; D9:17`, `D:11:26`, `D30:05`)
    evidence_dropped: int = 0  # ids that name no turn
    questions_dropped: int = 0  # questions of categories 1-4 left with no evidence
    dropped_examples: list[str] = field(default_factory=list)

    @property
    def questions(self) -> int:
        return sum(len(c.questions) for c in self.conversations)

    @property
    def turns(self) -> int:
        return sum(len(c.turns) for c in self.conversations)


def session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> datetime (UTC)."""
    match = _DATE.search(text or "")
    if not match:
        raise ValueError(f"unreadable session date {text!r}")
    hour, minute, half, day, month, year = match.groups()
    hour = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime(int(year), _MONTHS[month.lower()], int(day), hour, int(minute), tzinfo=UTC)


def _label_pieces(label: str) -> list[str]:
    """The turn ids one raw evidence label names: `D8:6; D9:17` -> two ids, a range `D12:3-D12:5` ->
    each id in it, ids glued by a colon (`D13:45:D20:19`) -> two, stray spaces and punctuation (`D 2:18`,
    `D5:3.`) dropped."""

    def expand(match: re.Match) -> str:
        s1, t1, s2, t2 = (int(g) for g in match.groups())
        if s1 == s2 and 0 <= t2 - t1 <= MAX_RANGE:
            return " ".join(f"D{s1}:{t}" for t in range(t1, t2 + 1))
        return f"D{s1}:{t1} D{s2}:{t2}"

    text = _RANGE.sub(expand, re.sub(r"D\s+(?=\d)", "D", str(label)))
    text = re.sub(r"(?<=\d):(?=D)", " ", text)
    return [p.strip(".:") for p in re.split(r"[;,\s]+", text) if p.strip(".:")]


def evidence_normalise(raw: Iterable[str], known: set[str]) -> tuple[list[str], int, list[str]]:
    """Canonical evidence ids (`D<session>:<turn>`, no leading zeros) found in the raw labels, how many
    raw labels had to be repaired, and the pieces that name no known turn (dropped)."""
    ids: list[str] = []
    fixed = 0
    dropped: list[str] = []
    for label in raw:
        pieces = _label_pieces(label)
        found = []
        for piece in pieces or [str(label)]:
            match = _EVIDENCE.fullmatch(piece)
            canonical = f"D{int(match.group(1))}:{int(match.group(2))}" if match else None
            if canonical in known:
                found.append(canonical)
            else:
                dropped.append(piece)
        if found and (len(pieces) > 1 or found[0] != label):
            fixed += 1
        ids.extend(x for x in found if x not in ids)
    return ids, fixed, dropped


def questions_read(
    dataset: "Dataset", qas: Iterable[dict], known: set[str], wanted: set[int]
) -> list["Question"]:
    """The questions of the wanted categories with their evidence normalised; the dataset counts what
    was repaired and dropped."""
    questions = []
    for qa in qas:
        if qa.get("category") not in wanted:
            continue
        evidence, fixed, dropped = evidence_normalise(qa.get("evidence", []), known)
        dataset.evidence_fixed += fixed
        dataset.evidence_dropped += len(dropped)
        dataset.dropped_examples += dropped[: max(0, 10 - len(dataset.dropped_examples))]
        if not evidence:
            dataset.questions_dropped += 1
            continue
        questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    return questions


def dataset_parse(data: list[dict], categories: Iterable[int] = CATEGORIES) -> Dataset:
    wanted = set(categories)
    dataset = Dataset(conversations=[])
    for sample in data:
        conv = sample["conversation"]
        speakers = (conv["speaker_a"], conv["speaker_b"])
        turns: list[Turn] = []
        numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k) and conv[k])
        for number in numbers:
            start = session_date(conv[f"session_{number}_date_time"])
            for i, raw in enumerate(conv[f"session_{number}"]):
                text = raw.get("text", "")
                if raw.get("blip_caption"):
                    text = f"{text} [shares a photo: {raw['blip_caption']}]"
                match = _EVIDENCE.fullmatch(raw["dia_id"])
                dia_id = f"D{int(match.group(1))}:{int(match.group(2))}" if match else raw["dia_id"]
                turns.append(Turn(dia_id, number, raw["speaker"], text.strip(), start + i * TURN_SPACING))
        known = {t.dia_id for t in turns}
        questions = questions_read(dataset, sample.get("qa", []), known, wanted)
        dataset.conversations.append(Conversation(str(sample["sample_id"]), speakers, turns, questions))
    return dataset


def dataset_load(path: str | Path, categories: Iterable[int] = CATEGORIES) -> Dataset:
    with open(path, encoding="utf-8") as f:
        return dataset_parse(json.load(f), categories)


# --- metrics -------------------------------------------------------------------------------------


def recall_at(ranked: list[str], gold: list[str], k: int) -> float:
    """Share of the gold turns among the first k ranked."""
    top = set(ranked[:k])
    return sum(1 for g in gold if g in top) / len(gold)


def reciprocal_rank(ranked: list[str], gold: list[str]) -> float:
    for i, item in enumerate(ranked, 1):
        if item in gold:
            return 1.0 / i
    return 0.0


@dataclass
class Scores:
    """Running means of R@5, R@10 and MRR, overall and per category."""

    sums: dict = field(default_factory=dict)

    def add(self, category: int, ranked: list[str], gold: list[str]) -> None:
        values = (recall_at(ranked, gold, 5), recall_at(ranked, gold, 10), reciprocal_rank(ranked, gold))
        for key in ("all", category):
            n, r5, r10, mrr = self.sums.get(key, (0, 0.0, 0.0, 0.0))
            self.sums[key] = (n + 1, r5 + values[0], r10 + values[1], mrr + values[2])

    def row(self, key="all") -> tuple[int, float, float, float]:
        n, r5, r10, mrr = self.sums.get(key, (0, 0.0, 0.0, 0.0))
        return (n, r5 / n, r10 / n, mrr / n) if n else (0, 0.0, 0.0, 0.0)


# --- the BM25 baseline ---------------------------------------------------------------------------


class Bm25Baseline:
    """rank-bm25's Okapi BM25 over Snowball English stems, stopwords removed, of one conversation."""

    def __init__(self, turns: list[Turn]):
        import snowballstemmer
        from rank_bm25 import BM25Okapi

        self._stemmer = snowballstemmer.stemmer("english")
        self._ids = [t.dia_id for t in turns]
        self._bm25 = BM25Okapi([self.tokens(t.document) or ["\x00"] for t in turns])

    def tokens(self, text: str) -> list[str]:
        words = [w for w in _TOKEN.findall(text.lower()) if w not in STOPWORDS]
        return self._stemmer.stemWords(words)

    def rank(self, question: str, limit: int = 10) -> list[str]:
        scores = self._bm25.get_scores(self.tokens(question))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return [self._ids[i] for i in order[:limit]]

"""REALTALK's format read into bench_recall's Dataset (benchmarks/locomo.py).

REALTALK (github.com/danny911kr/REALTALK, `data/Chat_*.json`; the repository has no licence file, so
it is used for evaluation only and never committed) holds 21 days of real messaging-app chats between
two people, one file per pair, with memory-probing questions labelled like LoCoMo's. A file holds
`name` ({"speaker_1", "speaker_2"}), `session_<n>` lists of turns ({"clean_text", "speaker",
"date_time": "29.12.2023, 22:42:04", "dia_id", optional "blip_caption"}) and `qa` ({"question",
"evidence", "category"}). Unlike LoCoMo, every turn has its own time, and the `dia_id` prefix does not
always match the session it sits in (the labels use the ids, so the ids are kept as they are).
Evidence labels include ranges (`D12:3-D12:5`) and ids glued together (`D13:45:D20:19`).
"""

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.locomo import CATEGORIES, Conversation, Dataset, Turn, questions_read

_ID = re.compile(r"D:?(\d+):(\d+)")


def message_time(text: str) -> datetime:
    """'29.12.2023, 22:42:04' -> datetime (UTC)."""
    try:
        return datetime.strptime(str(text).strip(), "%d.%m.%Y, %H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"unreadable message time {text!r}") from None


def is_realtalk(data) -> bool:
    return isinstance(data, dict) and "qa" in data and "session_1" in data and "name" in data


def conversation_parse(
    sample_id: str, data: dict, dataset: Dataset, categories: Iterable[int] = CATEGORIES
) -> Conversation:
    names = data["name"]
    speakers = (str(names["speaker_1"]), str(names["speaker_2"]))
    numbers = sorted(int(k.split("_")[1]) for k in data if re.fullmatch(r"session_\d+", k) and data[k])
    turns: list[Turn] = []
    for number in numbers:
        for raw in data[f"session_{number}"]:
            text = str(raw.get("clean_text", "")).strip()
            if raw.get("blip_caption"):
                text = f"{text} [shares a photo: {raw['blip_caption']}]".strip()
            match = _ID.fullmatch(str(raw["dia_id"]))
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}" if match else str(raw["dia_id"])
            turns.append(Turn(dia_id, number, str(raw["speaker"]), text, message_time(raw["date_time"])))
    if not turns:
        raise ValueError(f"{sample_id}: no turns")
    known = {t.dia_id for t in turns}
    if len(known) != len(turns):
        raise ValueError(f"{sample_id}: turn ids repeat, so evidence labels would be ambiguous")
    questions = questions_read(dataset, data.get("qa", []), known, set(categories))
    return Conversation(sample_id, speakers, turns, questions)


def dataset_load(path: str | Path, categories: Iterable[int] = CATEGORIES) -> Dataset:
    """One REALTALK file, or a folder of them (every `*.json` directly in it, by name)."""
    path = Path(path)
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    dataset = Dataset(conversations=[])
    for file in files:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
        if not is_realtalk(data):
            raise ValueError(f"{file.name} is not a REALTALK conversation (no name, session_1 and qa)")
        dataset.conversations.append(conversation_parse(file.stem, data, dataset, categories))
    if not dataset.conversations:
        raise ValueError(f"no REALTALK conversation (*.json) in {path}")
    return dataset

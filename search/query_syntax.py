"""What an agent typed, as words, phrases, exclusions and OR groups (search/query.py turns them into
tsqueries).

`"a phrase"` is one item; `-word` and `-"a phrase"` exclude (a dash, a letter and at least two more
characters, so a command's options and negative numbers stay words); `a OR b` (or `a | b`) makes one
group of alternatives. A run of Chinese, Japanese or Korean characters outside quotes is its pairs
(vault/search_text.py), each a word, and so is a run of Thai, Lao, Myanmar or Khmer, whose vowel and
tone marks are part of its words (not of Python's word characters).
"""

import re
from dataclasses import dataclass

from vault.search_text import UNSPACED_CLASS, cjk_pairs, cjk_runs, has_cjk

_TOKEN_RE = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_WORD_RE = re.compile(rf"[\w{UNSPACED_CLASS}]+(?:[.'’\-][\w{UNSPACED_CLASS}]+)*")
# "-word" excludes. A command line's options ("--maxfail=1", "-k", "rm -rf") and negative numbers
# ("-1") are searched as words: an agent pasting a command would otherwise exclude the very memory that
# holds it. So an exclusion is one dash, then a letter and at least two more characters.
_EXCLUSION_RE = re.compile(r"-[^\W\d_]\S\S")
# A whole number typed in comma-separated groups of three ("1,250,000"): searched as its digits, whose
# forms include the grouped ones. (PostgreSQL's parser would read three numbers, found anywhere.)
_GROUPED_RE = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?!\d|[.,]\d)")


@dataclass
class Item:
    text: str
    phrase: bool = False
    excluded: bool = False


def query_words(text: str) -> list[str]:
    """The words of `text` (_WORD_RE), a run of CJK characters as its pairs (vault/search_text.py):
    "会话缓存" asks for 会话, 话缓 and 缓存, each a word, as a question in English asks for its words.
    A pair met again is not asked twice."""
    words = _WORD_RE.findall(text)
    if not has_cjk(text):
        return words
    cut: list[str] = []
    pairs: set[str] = set()
    for word in words:
        for run, cjk in cjk_runs(word):
            if not cjk:
                cut += _WORD_RE.findall(run)
                continue
            for pair in cjk_pairs(run):
                if pair not in pairs:
                    pairs.add(pair)
                    cut.append(pair)
    return cut


def query_parse(q: str) -> list[Item | str]:
    """Split a query into words, phrases, exclusions and the OR keyword (kept as the string "OR")."""
    parts: list[Item | str] = []
    for match in _TOKEN_RE.finditer(q):
        minus, phrase, bare = match.groups()
        if phrase is not None:
            words = _WORD_RE.findall(phrase)
            if len(words) == 1 and words[0] == phrase.strip():
                parts.append(Item(words[0], excluded=bool(minus)))
            elif words:
                # The phrase as typed, so that PostgreSQL's parser splits it as it split the stored
                # text: "11/22/63" is one token there, not the three words 11, 22 and 63.
                parts.append(Item(" ".join(phrase.split()), phrase=True, excluded=bool(minus)))
            continue
        if bare in ("OR", "|"):
            parts.append("OR")
            continue
        excluded = bool(_EXCLUSION_RE.match(bare))
        bare = _GROUPED_RE.sub(lambda m: m.group(0).replace(",", ""), bare)
        for word in query_words(bare[1:] if excluded else bare):
            parts.append(Item(word, excluded=excluded))
    return parts


def query_groups(parts: list[Item | str]) -> tuple[list[list[Item]], list[Item]]:
    groups: list[list[Item]] = []
    excluded: list[Item] = []
    join_next = False
    for part in parts:
        if part == "OR":
            join_next = bool(groups)
            continue
        if part.excluded:
            excluded.append(part)
            continue
        if join_next and groups:
            groups[-1].append(part)
        else:
            groups.append([part])
        join_next = False
    return groups, excluded


def phrases_relaxed(groups: list[list[Item]]) -> tuple[list[list[Item]], list[str]]:
    """The groups with each quoted phrase replaced by its words (optional, like unquoted ones)."""
    relaxed: list[list[Item]] = []
    phrases: list[str] = []
    for group in groups:
        if not any(item.phrase for item in group):
            relaxed.append(group)
            continue
        phrases += [item.text for item in group if item.phrase]
        if len(group) == 1:
            relaxed += [[Item(word)] for word in query_words(group[0].text)]
        else:  # `"a b" OR c`: the phrase's words join the alternatives
            relaxed.append(
                [Item(w) for item in group for w in (query_words(item.text) if item.phrase else [item.text])]
            )
    return relaxed, phrases

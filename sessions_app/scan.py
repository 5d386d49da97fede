"""The write-ahead scan: spot facts in a user message before the agent answers.

The WAL protocol runs a handful of regexes over every user message so that corrections, names,
preferences, decisions, concrete values and explicit "remember this" requests are written down even if the
conversation is later compacted. This module is the pure part of that: no Django, no database, so the
service that records the matches can be tested separately and the patterns can be tested in bulk.

Triggers cover English, Portuguese (Brazilian and European) and Uzbek (Latin script). They are tuned to
stay quiet on ordinary chat: a false positive pollutes long-term memory forever, while a miss only loses
one note that the agent will probably see again.
"""

import functools
import re
import unicodedata
from dataclasses import dataclass

from vault.regex_prefilter import haystack, required_strings, requires_digit
from vault.text import APOSTROPHES as _APOSTROPHES
from vault.text import normalise_fact

__all__ = ["normalise_fact"]

CATEGORIES = ("correction", "proper_noun", "preference", "decision", "specific_value", "remember")
DURABLE_CATEGORIES = frozenset({"proper_noun", "preference", "remember"})

MAX_MATCH_CHARS = 300


@dataclass(frozen=True)
class ScanMatch:
    category: str
    text: str
    trigger: str


@dataclass(frozen=True)
class _Trigger:
    category: str
    pattern: re.Pattern
    # Questions ("Should we use Redis?", "O que está errado?") ask rather than state, so for decisions and
    # "that's wrong" corrections they must not be recorded as facts.
    statements_only: bool = False
    # The pattern ends in a capitalised word that must be a name, not one of _NOT_NAMES.
    names: bool = False
    # Match the user's own spelling instead of the accent-folded sentence, for triggers where an accent
    # carries meaning.
    accented: bool = False
    # A pattern in lower case that every match of the trigger contains, tested on the lower-cased text
    # (`haystack`) before the trigger runs: for the triggers whose needed strings (`required_strings`)
    # are in almost every text (a digit, "i"), a far cheaper test than their own pass.
    hint: re.Pattern | None = None


def _compile(regex: str) -> re.Pattern:
    return re.compile(regex, re.IGNORECASE)


# A capitalised word, matched case-sensitively even inside the case-insensitive trigger patterns: this is
# what tells "I'm Sardor" from "I'm tired".
_NAME = r"(?-i:[A-Z][a-z'\-]+)"

# Capitalised words that follow "I'm" at the start of sentences typed in title case or by habit, and are
# never names.
_NOT_NAMES = frozenset(
    {"Not", "So", "Sorry", "Sure", "Just", "Also", "Still", "Here", "Back", "Done", "Fine", "Okay", "Ok",
     "Going", "Trying", "Working", "Using", "Looking", "Glad", "Happy", "Afraid", "Really", "The", "A", "An"}
)  # fmt: skip

# "actually" / "na verdade" are corrections when they open a sentence or clause ("Actually, it's Sardor"),
# not when they are filler in the middle of one ("This actually works").
_OPENER = (
    r"(?:^\W*|[,;:(\u2014\u2013]\s*|\b(?:no|nao|oh|wait|well|sorry|hmm|um|uh|ah|ops|opa|desculpa)\b\s*,?\s*)"
)

_MONTHS_EN = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_MONTHS_PT = r"(?:janeiro|fevereiro|marco|abril|maio|junho|julho|agosto|setembro|outubro|novembro|dezembro)"
_ORDINAL = r"(?:st|nd|rd|th|º|o)?"

# Patterns run against the accent-folded sentence (see _fold), so PT triggers are written without accents
# and match "não esqueça" and "nao esqueca" alike.
_TRIGGERS: tuple[_Trigger, ...] = (
    # correction
    _Trigger("correction", _compile(_OPENER + r"(?:actually|na verdade|aslida)\b")),
    _Trigger("correction", _compile(r"\b(?:no,?\s+)?i\s+(?:actually\s+)?meant\b")),
    _Trigger("correction", _compile(r"\bit(?:'?s|\s+is)\s+not\s+[^,;.]{1,60}[,;]\s*it(?:'?s|\s+is)\b")),
    _Trigger(
        "correction",
        _compile(r"\b(?:that|this|it)(?:'?s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+(?:right|correct))\b"),
        statements_only=True,
    ),
    _Trigger("correction", _compile(r"\b(?:correction|correcao)\s*:")),
    _Trigger(
        "correction", _compile(r"(?<!voce )(?<!ele )(?<!ela )(?<!vc )\bquis\s+dizer\b"), statements_only=True
    ),
    # "não é X, é Y": the second "é" must keep its accent, since a bare "e" is Portuguese for "and".
    _Trigger(
        "correction",
        _compile(r"\bn[ãa]o\s+[ée]\s+[^,;.]{1,60}[,;]\s*(?:é|mas\s+sim|e\s+sim)\b"),
        accented=True,
    ),
    _Trigger("correction", _compile(r"(?:^\W*corrigindo\b|\bcorrigindo\s*[:,])")),
    _Trigger(
        "correction",
        _compile(r"(?:^\W*|\b(?:isso|isto|voce|ai|nao,)\s+)(?:(?:esta|ta|estava)\s+)?errad[oa]\b"),
        statements_only=True,
    ),
    _Trigger("correction", _compile(r"\bdemoqchi\s+edim\b|\bbu\s+noto'?g'?ri\b"), statements_only=True),
    # proper_noun
    _Trigger("proper_noun", _compile(r"\bmy\s+name(?:'s|\s+is)\s+\w+")),
    _Trigger("proper_noun", _compile(r"\bcall\s+me\s+" + _NAME), names=True),
    _Trigger(
        "proper_noun",
        _compile(r"\bi(?:'?m|\s+am)\s+" + _NAME),
        names=True,
        hint=re.compile(r"i(?:'?m|\s+am)\s"),
    ),
    _Trigger("proper_noun", _compile(r"\bmeu\s+nome\s+(?:e|eh)\s+\w+")),
    _Trigger("proper_noun", _compile(r"\bme\s+chamo\s+\w+")),
    _Trigger(
        "proper_noun", _compile(r"\b(?:pode|podes|podem)\s+me\s+chamar\s+de\s+\w+|\bme\s+chame\s+de\s+\w+")
    ),
    _Trigger("proper_noun", _compile(r"(?:\beu\s+|^\W*)sou\s+(?:o\s+|a\s+)?" + _NAME), names=True),
    _Trigger("proper_noun", _compile(r"\b(?:mening\s+)?ismim\s+\w+")),
    # preference
    _Trigger(
        "preference",
        _compile(
            r"\bi\s+(?:really\s+|absolutely\s+|also\s+|do\s+not\s+|don'?t\s+|never\s+)?"
            r"(?:like|prefer|love|hate|want(?!\s+to\s+(?:know|understand|see|ask|check|learn|try|find)\b))\b"
        ),
    ),
    _Trigger("preference", _compile(r"\bi(?:'?d|\s+would)\s+(?:rather|prefer)\b")),
    _Trigger(
        "preference", _compile(r"\b(?:eu\s+(?:nao\s+)?|nao\s+)gosto\b|^\W*gosto\s+(?:de|da|do|muito|mais)\b")
    ),
    _Trigger("preference", _compile(r"\bprefiro\b|\b(?:odeio|adoro)\b")),
    _Trigger(
        "preference",
        _compile(r"(?:\beu\s+(?:nao\s+)?|^\W*)quero\b(?!\s+(?:saber|entender|ver|perguntar|testar)\b)"),
    ),
    _Trigger("preference", _compile(r"\byoq(?:adi|maydi)\b|\b(?:afzal|yaxshi)\s+ko'?raman\b|\bxohlayman\b")),
    # decision: a bare "use" is everywhere in coding chat, so it only counts with a first-person subject or
    # as the imperative that opens the sentence.
    _Trigger(
        "decision",
        _compile(
            r"\b(?:let'?s|let\s+us)\s+(?:do|go\s+with|use|stick\s+with|pick|choose)\b"
            r"|\b(?:we'?ll|we\s+will|we\s+are\s+going\s+to|we'?re\s+going\s+to|i'?ll|i\s+will)"
            r"\s+(?:go\s+with|use|stick\s+with|pick|choose)\b"
        ),
        statements_only=True,
    ),
    _Trigger(
        "decision",
        _compile(r"^\W*(?:(?:ok(?:ay)?|so|then|alright|fine)\b\W*)?(?:go\s+with|use|stick\s+with)\b"),
        statements_only=True,
    ),
    _Trigger(
        "decision",
        _compile(
            r"\b(?:we|i)(?:'ve|\s+have)?\s+decided\b|\bdecided\s+(?:to|on)\b|\b(?:we'?re|we\s+are)\s+going\s+with\b"
        ),
        statements_only=True,
    ),
    _Trigger(
        "decision",
        _compile(
            r"\bvamos\s+(?:usar|utilizar|com|de)\b|\b(?:decidimos|optamos|escolhemos)\b|\bfica\s+decidido\b"
        ),
        statements_only=True,
    ),
    _Trigger(
        "decision",
        _compile(r"\bqaror\s+qildik\b|\btanladik\b|\bishlatamiz\b|\bfoydalanamiz\b"),
        statements_only=True,
    ),
    # specific_value
    _Trigger(
        "specific_value",
        _compile(r"\bhttps?://[^\s<>\"']*[^\s<>\"'.,;:!?)\]]|\bwww\.[^\s<>\"']*[^\s<>\"'.,;:!?)\]]"),
    ),
    _Trigger(
        "specific_value",
        _compile(
            r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b|\b\d{1,2}[.-]\d{1,2}[.-]\d{4}\b"
        ),
        hint=re.compile(r"\d[-/.]\d"),
    ),
    _Trigger(
        "specific_value",
        _compile(
            rf"\b{_MONTHS_EN}\s+\d{{1,2}}{_ORDINAL}\b(?:,?\s+\d{{4}}\b)?"
            rf"|\b\d{{1,2}}{_ORDINAL}\s+(?:of\s+)?{_MONTHS_EN}(?:,?\s+\d{{4}}\b)?"
            rf"|\b\d{{1,2}}{_ORDINAL}\s+de\s+{_MONTHS_PT}\b(?:\s+de\s+\d{{4}}\b)?"
        ),
    ),
    _Trigger(
        "specific_value",
        _compile(
            r"(?:R\$|US\$|€|£|¥)\s?\d(?:[\d.,]*\d)?"
            # A lone "$1" is a shell or regex placeholder far more often than a price.
            r"|\$\s?(?:\d{2,}|\d[.,]\d)(?:[\d.,]*\d)?"
            r"|\b\d(?:[\d.,]*\d)?\s?(?:reais|dollars|euros?|USD|BRL|EUR)\b"
            r"|\b\d+(?:[.,]\d+)?\s?(?:%|percent\b|por\s+cento\b)"
        ),
    ),
    # Large numbers: four or more bare digits except a lone year ("in 2024"), or digits grouped by
    # thousands separators; a space as separator only counts from "1 000 000" up, to avoid "5 100-word".
    _Trigger(
        "specific_value",
        _compile(
            r"(?<![\w.,])(?!(?:19|20)\d{2}(?!\w))\d{4,}(?!\w)"
            r"|(?<![\w.,])[1-9]\d{0,2}(?:[,.]\d{3})+(?:[.,]\d+)?(?!\w)"
            r"|(?<![\w.,])[1-9]\d{0,2}(?:[ \u00a0\u202f]\d{3}){2,}(?!\w)"
        ),
        hint=re.compile(r"\d(?:\d{3}|[,. \u00a0\u202f]\d{3})"),
    ),
    # remember
    _Trigger(
        "remember",
        _compile(
            r"(?<!you )\bremember\s+(?:this|that)\b|^\W*(?:please\s+)?remember\b(?!\s+when\b)"
            r"|\b(?:don'?t|do\s+not|never)\s+forget\b|\bkeep\s+in\s+mind\b"
            r"|\bnote\s+that\b(?!\s+down\b)|\bfor\s+the\s+record\b"
        ),
    ),
    _Trigger(
        "remember",
        _compile(
            r"\blembre-se\b|\blembre\s+(?:que|disso)\b|(?<!voce )(?<!vc )(?<!se )\blembra\s+que\b"
            r"|\bnao\s+(?:se\s+)?esquec[ae]\b|\bguard[ae]\s+isso\b|\banot[ae]\b"
        ),
    ),
    _Trigger(
        "remember", _compile(r"\beslab\s+qol(?:ing)?\b|\bunutma(?:ng|nglar)?\b|\byodda\s+tut(?:ing)?\b")
    ),
)

# Sentence boundaries: end punctuation followed by whitespace, or a line break. Requiring whitespace after the
# punctuation keeps URLs, decimals (3.14) and dotted dates (15.06.2025) in one piece.
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?\u2026])\s+|[\r\n]+")
# The local part at most 64 characters, as an address allows: unbounded, a long run without its "@domain"
# was searched to its end from each of its characters, time growing with the square of its length.
_EMAIL = re.compile(r"[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+")


# What _fold maps: every non-ASCII character and the backtick (an apostrophe look-alike).
_FOLDED_CHARS = re.compile(r"[^\x00-\x7f]|`")


@functools.lru_cache(maxsize=8192)
def _fold_char(char: str) -> str:
    char = char.translate(_APOSTROPHES)
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return base if len(base) == 1 else char


def _fold_match(match: re.Match) -> str:
    return _fold_char(match.group())


def _fold(text: str) -> str:
    """Drop accents one character at a time so the folded text keeps the original's indices.

    Keeping the length lets a match found in the folded text be reported with the user's own spelling.
    Characters whose decomposition is longer than one letter (ligatures) are left alone for that reason.
    Only the characters that can change are looked at (a sentence has a few accented letters at most).
    """
    if text.isascii() and "`" not in text:  # most sentences: nothing to fold
        return text
    return _FOLDED_CHARS.sub(_fold_match, text)


def _excerpt(sentence: str, start: int) -> str:
    """Keep long sentences to MAX_MATCH_CHARS, as a window that still shows the trigger."""
    if len(sentence) <= MAX_MATCH_CHARS:
        return sentence
    begin = max(0, min(start - 100, len(sentence) - MAX_MATCH_CHARS))
    return sentence[begin : begin + MAX_MATCH_CHARS].strip()


# For each trigger, strings one of which its match must contain (vault.regex_prefilter): most sentences
# hold none of them, and an `in` test rules the trigger out for far less than its regex pass. They are
# tested on the whole message first (a string a sentence holds, the message holds), then per sentence on
# the triggers left. A trigger whose every match holds a digit does not run on a sentence without one.
_NEEDS: tuple[tuple[str, ...] | None, ...] = tuple(required_strings(t.pattern) for t in _TRIGGERS)
_NEEDS_DIGIT: tuple[bool, ...] = tuple(requires_digit(t.pattern) for t in _TRIGGERS)
_DIGIT = re.compile(r"\d")


def _trigger_find(trigger: _Trigger, sentence: str, folded: str) -> re.Match | None:
    if trigger.accented:
        return trigger.pattern.search(sentence)
    if trigger.category == "specific_value" and "@" in folded:
        # An e-mail address is contact data, not a value: blank it so its digits and dots don't count.
        folded = _EMAIL.sub(lambda m: " " * len(m.group()), folded)
    for match in trigger.pattern.finditer(folded):
        if trigger.names and match.group().split()[-1] in _NOT_NAMES:
            continue
        return match
    return None


def _candidates(text: str, folded: str) -> list[tuple[_Trigger, tuple[str, ...] | None, bool]]:
    """The triggers that may fire somewhere in the message: those whose needed strings it holds."""
    searched = {False: haystack(folded), True: None}
    found = []
    for trigger, needs, needs_digit in zip(_TRIGGERS, _NEEDS, _NEEDS_DIGIT, strict=True):
        if needs is not None or trigger.hint is not None:
            if searched[trigger.accented] is None:
                searched[trigger.accented] = haystack(text)
            lowered = searched[trigger.accented]
            if needs is not None and not any(map(lowered.__contains__, needs)):
                continue
            if trigger.hint is not None and not trigger.hint.search(lowered):
                continue
        found.append((trigger, needs, needs_digit))
    return found


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of the text: the pieces between _SENTENCE_SPLIT's matches, stripped,
    empty ones left out."""
    spans = []
    start = 0
    for boundary in [*_SENTENCE_SPLIT.finditer(text), None]:
        end = boundary.start() if boundary else len(text)
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            first = start + len(piece) - len(piece.lstrip())
            spans.append((first, first + len(stripped)))
        start = boundary.end() if boundary else end
    return spans


def scan_message(text: str) -> list[ScanMatch]:
    """Return every category each sentence of a user message triggers, in message order.

    Each sentence reports a category at most once (the first trigger that fires), but may report several
    categories: "Remember that my name is Ana" is both a reminder and a name.
    """
    matches: list[ScanMatch] = []
    # Folding maps each character on its own, so a sentence's folded text is the folded message's slice.
    folded_text = _fold(text)
    candidates = _candidates(text, folded_text)
    if not candidates:
        return matches
    for start, end in _sentence_spans(text):
        sentence, folded = text[start:end], folded_text[start:end]
        is_question = sentence.rstrip().endswith("?")
        found: dict[str, ScanMatch] = {}
        searched = {False: None, True: None}
        digits = {False: None, True: None}
        for trigger, needs, needs_digit in candidates:
            if trigger.category in found or (trigger.statements_only and is_question):
                continue
            accented = trigger.accented
            if needs is not None or trigger.hint is not None:
                if searched[accented] is None:
                    searched[accented] = haystack(sentence if accented else folded)
                if needs is not None and not any(map(searched[accented].__contains__, needs)):
                    continue
                if trigger.hint is not None and not trigger.hint.search(searched[accented]):
                    continue
            if needs_digit:
                if digits[accented] is None:
                    digits[accented] = _DIGIT.search(sentence if accented else folded) is not None
                if not digits[accented]:
                    continue
            match = _trigger_find(trigger, sentence, folded)
            if match is None:
                continue
            found[trigger.category] = ScanMatch(
                category=trigger.category,
                text=_excerpt(sentence, match.start()),
                trigger=sentence[match.start() : match.end()].strip(),
            )
        matches.extend(found[category] for category in CATEGORIES if category in found)
    return matches

"""Heuristics that keep memory trustworthy without an LLM: duplicate, conflict and poisoning checks.

All functions here are pure (text in, findings out) so they are cheap on the write path and easy
to test; vault.services decides what to do with the findings.
"""

import functools
import hashlib
import re
import unicodedata
from dataclasses import dataclass

from vault.search_text import CJK_RANGES, HANGUL_RANGES, UNSPACED_CLASS, UNSPACED_RANGES, cjk_pairs


def _marks_class() -> str:
    """Every combining mark (Unicode category M) as a character class: Python's \\w leaves them out, so a
    word was cut at its vowel sign (Hindi दिन day and दान donation both gave "द न"). Past U+1FFFF only
    the variation selectors supplement holds marks; the planes between are not read (startup time)."""
    ranges, start = ["\U000e0100-\U000e01ef"], None
    for code in range(0x20001):
        is_mark = code < 0x20000 and unicodedata.category(chr(code)).startswith("M")
        if is_mark and start is None:
            start = code
        elif not is_mark and start is not None:
            ranges.append(f"{chr(start)}-{chr(code - 1)}")
            start = None
    return "".join(ranges)


# Letters with their marks, and the Thai, Lao, Myanmar and Khmer letters with their vowel and tone
# marks, which accent folding would drop: ข้าว (rice) and ข่าว (news) are different words.
_LETTER = rf"(?:[^\W_]|[{_marks_class()}]|[{UNSPACED_CLASS}])"
_WORD_RE = re.compile(rf"{_LETTER}+(?:[.+#-]{_LETTER}+)*")
# _WORD_RE on ASCII text: of the ASCII characters _LETTER takes the letters and digits only (no mark
# or unspaced letter is ASCII), so both find the same words in it (a test compares them character by
# character). Its three classes made _WORD_RE about seven times slower on the same text (about 30 µs
# for an entry of 330 characters, and an entry write read its text twice).
_ASCII_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:[.+#-][A-Za-z0-9]+)*")
_UNSPACED = re.compile(f"[{UNSPACED_CLASS}]")
# Scripts written without spaces between words (Korean has them): compared by character pairs.
PAIRS_COMPARED_CLASS = "".join(
    f"{chr(low)}-{chr(high)}"
    for low, high in [*(r for r in CJK_RANGES if r not in HANGUL_RANGES), *UNSPACED_RANGES]
)
_PAIRED = re.compile(f"[{PAIRS_COMPARED_CLASS}]")
_PAIRED_RUNS = re.compile(f"[{PAIRS_COMPARED_CLASS}]+|[^{PAIRS_COMPARED_CLASS}]+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "at",
        "by",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "we",
        "our",
        "you",
        "your",
        "i",
        "my",
        "me",
        "they",
        "them",
        "he",
        "she",
        "his",
        "her",
        "will",
        "would",
        "should",
        "can",
        "could",
        "do",
        "does",
        "did",
        "not",
        "no",
        "so",
        "if",
        "then",
        "than",
        "there",
        "here",
        "o",
        "os",
        "as",
        "um",
        "uma",
        "uns",
        "umas",
        "e",
        "ou",
        "de",
        "do",
        "da",
        "dos",
        "das",
        "no",
        "na",
        "nos",
        "nas",
        "em",
        "para",
        "por",
        "com",
        "que",
        "se",
        "é",
        "são",
        "foi",
        "era",
        "ser",
        "ao",
        "aos",
        "à",
        "às",
        "pelo",
        "pela",
        "pelos",
        "pelas",
        "nós",
        "eu",
        "você",
        "vocês",
        "ele",
        "ela",
        "eles",
        "elas",
        "isso",
        "isto",
        "esse",
        "essa",
        "este",
        "esta",
        "mais",
        "muito",
    ]
)


def text_words(text: str) -> str:
    """The words of a text as written: case, markdown punctuation and whitespace removed, letters and
    their marks kept. Two texts are the same text (an exact duplicate, the second not stored) only if
    these agree: a tone or accent mark, a letter with a stroke or a superscript digit changes a word
    (Vietnamese bán sell / bạn friend, Greek πότε when / ποτέ never, Spanish año / ano, German Maße /
    Masse, 10² / 102), so none is folded here. Canonically equal spellings (é as one character or as e
    and a combining accent) and full-width Latin letters and digits (ＡＰＩ, typed by an East Asian input
    method) are the same text. Lower case, not casefold: casefold makes ß "ss"."""
    if text.isascii():
        return " ".join(_ASCII_WORD_RE.findall(text.lower()))
    text = _FULL_WIDTH.sub(lambda match: unicodedata.normalize("NFKC", match.group()), text)
    return " ".join(_WORD_RE.findall(unicodedata.normalize("NFC", text).lower()))


# Full-width ASCII (U+FF01-U+FF5E): the same characters in the width of an ideograph.
_FULL_WIDTH = re.compile("[\uff01-\uff5e]+")


def text_as_written(text: str) -> str:
    """A text read as text_words reads it, its punctuation and spacing kept: canonically composed,
    full-width Latin letters and digits as ASCII, lower case; marks kept ("pôde" could is not "pode"
    can, "às" is not "as"), except that a negation typed with its accent is written without it ("não"
    is "nao"), as word_set knows it. For keys compared whole (a durable fact already in MEMORY.md)."""
    if text.isascii():
        return text.lower()
    text = _FULL_WIDTH.sub(lambda match: unicodedata.normalize("NFKC", match.group()), text)
    return _WORD_RE.sub(_negation_plain, unicodedata.normalize("NFC", text).lower())


def _negation_plain(match: re.Match) -> str:
    word = match.group()
    if word.isascii():
        return word
    plain = text_normalise(word)
    return plain if plain in _NEGATIONS else word


def text_normalise(text: str) -> str:
    """Case, accents, markdown punctuation and whitespace removed: 'the same words' compare equal. For
    word similarity only (a near duplicate is held for review unless its words as written agree too,
    vault/services/duplicates.py): "não" typed "nao" is the same word, "bán" and "bạn" are not.
    Folded from text_words, so that texts with the same content hash have the same word set."""
    return _words_folded(text_words(text))


def _words_folded(written: str) -> str:
    """text_normalise of a text whose text_words are `written`."""
    if written.isascii():
        return written
    folded = written.casefold()
    if not folded.isascii():
        folded = "".join(
            ch
            for ch in unicodedata.normalize("NFKD", folded)
            if not unicodedata.combining(ch) or _UNSPACED.match(ch)
        )
    return " ".join((_ASCII_WORD_RE if folded.isascii() else _WORD_RE).findall(folded))


def content_hash(text: str) -> str:
    """The hash of a text's words as written (text_words): equal for an exact duplicate only."""
    return hashlib.sha256(text_words(text).encode("utf-8")).hexdigest()


def content_hash_and_words(text: str) -> tuple[str, frozenset[str]]:
    """(content_hash(text), word_set(text)), the text read once for both (a new entry needs both)."""
    written = text_words(text)
    return hashlib.sha256(written.encode("utf-8")).hexdigest(), _word_set(_words_folded(written))


def word_set(text: str, *, folded: bool = True) -> frozenset[str]:
    """Meaningful words of a text, with a crude plural fold, for set similarity. A run of Chinese,
    Japanese, Thai, Lao, Myanmar or Khmer, which has no spaces between its words, gives its character
    pairs (as search cuts it, vault/search_text.py): without them a clause was one word.

    folded=False: the words as written (text_words), accents kept; a stopword or negation is still
    known by its folded spelling ("não" is "nao")."""
    return _word_set(text_normalise(text) if folded else text_words(text))


def _word_set(normalised: str) -> frozenset[str]:
    """word_set of a text read as `normalised` (text_normalise, or text_words for the words as written)."""
    words = set()
    if not _PAIRED.search(normalised):  # no token holds a character pair: each is one word
        for token in normalised.split():
            _word_add(words, token)
        return frozenset(words)
    for token in normalised.split():
        if not _PAIRED.search(token):
            _word_add(words, token)
            continue
        for run in _PAIRED_RUNS.findall(token):
            if _PAIRED.match(run):
                words.update(cjk_pairs(run))
            else:
                for word in _WORD_RE.findall(run):
                    _word_add(words, word)
    return frozenset(words)


# Words that turn a statement into its opposite: never dropped as stopwords, and two texts that differ
# in them are not duplicates ("we decided not to use Redis" is not "we decided to use Redis"). The "t"
# of "can't" or "doesn't", cut off at its apostrophe, is a "not".
_NEGATIONS = frozenset(["not", "never", "nao", "nunca", "nem", "jamais"])
_KNOWN_FOLDED = _NEGATIONS | _STOPWORDS


def _word_add(words: set[str], word: str) -> None:
    if not word.isascii() and (plain := text_normalise(word)) in _KNOWN_FOLDED:
        word = plain
    if word == "t":
        word = "not"
    if word in _NEGATIONS:
        words.add(word)
        return
    if word in _STOPWORDS or (len(word) < 2 and not word.isdigit()):
        return
    if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    words.add(word)


def compared_by_pairs(words: frozenset[str]) -> bool:
    """Whether a word set holds character pairs (word_set). Two different decisions can share most
    of their pairs (使用PostgreSQL / 使用MySQL作为主数据库: 92%) as a restatement does, so such a
    similarity may send an entry to review, never drop it."""
    return any(_PAIRED.search(word) for word in words)


NEAR_DUPLICATE_MIN_WORDS = 5
SKETCH_SIZE = 8


def sketch(words: frozenset[str]) -> list[int]:
    """Bottom-k MinHash sketch: the SKETCH_SIZE smallest 32-bit word hashes.

    Two texts with high Jaccard similarity share most of their smallest hashes, so a GIN index on the
    sketch finds near-duplicate candidates without reading every entry of the agent.
    """
    hashes = {
        int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big", signed=True)
        for word in words
    }
    return sorted(hashes)[:SKETCH_SIZE]


def sketch_similarity(a: list[int], b: list[int]) -> float:
    """Jaccard estimate from two bottom-k sketches: of the k smallest hashes of the union, the share
    present in both. Cheap enough to screen candidates before comparing their words."""
    return sketch_similarities(a, [b])[0]


def sketch_similarities(a: list[int], others: list[list[int]]) -> list[float]:
    """sketch_similarity of `a` with each of `others` (a new entry's with its up to 50 candidates':
    `a` is made a set once)."""
    if not a:
        return [0.0] * len(others)
    a_set = set(a)
    found = []
    for b in others:
        if not b:
            found.append(0.0)
            continue
        union_bottom = sorted(a_set.union(b))[:SKETCH_SIZE]
        found.append(len(a_set.intersection(b, union_bottom)) / len(union_bottom))
    return found


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets (1.0 identical, 0.0 disjoint)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def near_duplicate_score(a: frozenset[str], b: frozenset[str]) -> float:
    """Similarity for duplicate detection, 0.0 where word overlap would mislead.

    Short texts ("port is 5432") carry their meaning in one or two words, texts whose numbers
    differ state different values, and texts whose negations differ opposite ones: none is a
    near-duplicate, whatever the overlap.
    """
    if len(a) < NEAR_DUPLICATE_MIN_WORDS or len(b) < NEAR_DUPLICATE_MIN_WORDS:
        return 0.0
    if _numbers(a) != _numbers(b) or a & _NEGATIONS != b & _NEGATIONS:
        return 0.0
    return similarity(a, b)


@functools.lru_cache(
    maxsize=4096
)  # as many as the duplicate check's word sets (vault/services/duplicates.py)
def _numbers(words: frozenset[str]) -> frozenset[str]:
    """The words of a set that hold a digit. Cached: a write compares its words with up to 50 earlier
    entries' sets, mostly the same ones from one write to the next."""
    return frozenset(w for w in words if any(map(str.isdigit, w)))


# --- Conflicts ------------------------------------------------------------------------------------

_VALUE = r"(?P<value>[\w.+#/-]+(?: [\w.+#/-]+)?)"
_SUBJECT = r"(?P<subject>[\w][\w /-]{1,40}?)"
_END = r"(?=[.,;:!?)\n]|$| because| since| instead| porque| pois| em vez| ao inv[eé]s| rather| and | e )"
_CONFLICT_PATTERNS = [
    # "we decided to use X for Y", "we will use X for Y", "we went with X for the Y"
    re.compile(
        r"\b(?:decided to use|decided on|will use|are using|chose|picked|went with|settled on|switched to|"
        r"migrated to|standardi[sz]ed on|adopted|use|using)\s+"
        + _VALUE
        + r"\s+(?:for|as|in|on)\s+(?:the |our |all )?"
        + _SUBJECT
        + _END,
        re.IGNORECASE,
    ),
    # "for Y we use X" / "for the Y, we decided on X"
    re.compile(
        r"\bfor (?:the |our )?" + _SUBJECT + r",? we(?:'ll| will| have| decided to)? "
        r"(?:use|picked|chose|went with|settled on|decided on|adopted)\s+" + _VALUE + _END,
        re.IGNORECASE,
    ),
    # Portuguese: "decidimos usar X para Y", "vamos usar X no Y", "escolhemos X como Y"
    re.compile(
        r"\b(?:decidimos usar|vamos usar|usaremos|usamos|escolhemos|adotamos|optamos por|migramos para|"
        r"ficamos com|trocamos para)\s+(?:o |a )?" + _VALUE + r"\s+(?:para|como|no|na|nos|nas|em)\s+"
        r"(?:o |a |os |as |nosso |nossa )?" + _SUBJECT + _END,
        re.IGNORECASE,
    ),
    # "para Y vamos usar X"
    re.compile(
        r"\bpara (?:o |a |os |as )?"
        + _SUBJECT
        + r",? (?:vamos usar|usaremos|usamos|decidimos usar|escolhemos|"
        r"adotamos|optamos por)\s+(?:o |a )?" + _VALUE + _END,
        re.IGNORECASE,
    ),
    # Specific values: "the deadline is 2025-06-15", "o prazo é 15/06"
    re.compile(
        r"\b(?:the |our |o |a |nosso |nossa )?(?P<subject>deadline|due date|launch date|release date|budget|"
        r"prazo|data de entrega|data de lançamento|orçamento|target version|versão alvo)\s+(?:is|will be|é|será|"
        r"fica|ficou)\s+(?:now |agora )?(?P<value>[\w.,/$€R-]+(?: [\w.,/-]+)?)",
        re.IGNORECASE,
    ),
]


@dataclass(frozen=True)
class Claim:
    subject: str
    value: str


def _subject_key(subject: str) -> str:
    words = [w for w in text_normalise(subject).split() if w not in _STOPWORDS]
    folded = [w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w for w in words]
    return " ".join(folded[:3])


def claims_find(text: str) -> tuple[Claim, ...]:
    """(subject, value) claims a text makes, e.g. 'use Redis for sessions' -> (session, redis).

    Each new entry is checked against up to NEAR_DUPLICATE_WINDOW recent entries of its category, whose
    claims were found the same way for the entries before it: a process keeps the claims of its last
    CLAIMS_CACHE_SIZE texts of up to CLAIMS_CACHE_TEXT_CHARS characters (a few megabytes at most)."""
    if len(text) <= CLAIMS_CACHE_TEXT_CHARS:
        return _claims_cached(text)
    return _claims(text)


CLAIMS_CACHE_SIZE = 2048
CLAIMS_CACHE_TEXT_CHARS = 2000


def _claims(text: str) -> tuple[Claim, ...]:
    claims = []
    for pattern in _CONFLICT_PATTERNS:
        for match in pattern.finditer(text):
            subject = _subject_key(match.group("subject"))
            value = text_normalise(match.group("value"))
            if subject and value and Claim(subject, value) not in claims:
                claims.append(Claim(subject, value))
    return tuple(claims)


_claims_cached = functools.lru_cache(maxsize=CLAIMS_CACHE_SIZE)(_claims)


def claims_conflict(new: list[Claim], old: list[Claim]) -> list[tuple[Claim, Claim]]:
    """Pairs of claims about the same subject with different values."""
    pairs = []
    for a in new:
        for b in old:
            if a.subject == b.subject and a.value != b.value:
                if a.value.split()[0] == b.value.split()[0]:
                    continue  # "postgres" vs "postgres 16": a refinement, not a contradiction
                pairs.append((a, b))
    return pairs


# --- Poisoning --------------------------------------------------------------------------------------

_INVISIBLE = re.compile(
    "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad\u180e\U000e0000-\U000e007f]"
)
# Invisible characters that writing needs, taken out before the check above: the tags of a
# subdivision flag (a black flag, the region's code in tag letters and digits, a cancel tag: the flags
# of England, Scotland, Wales); a zero-width joiner between two emoji (👩‍💻, families, 🏳️‍🌈), after a
# skin tone or an emoji presentation selector too; a zero-width joiner or non-joiner between two letters
# or marks of the scripts whose spelling uses them (Arabic and Persian, Syriac, Thaana, N'Ko, the Indic
# scripts: می‌خواهم, क्‍ष). Tags elsewhere can spell hidden ASCII, and a joiner inside a Latin word can
# hide an instruction from the patterns below: both stay findings.
_SUBDIVISION_FLAG = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,6}\U000e007f")
_EMOJI = "\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff"
_JOINING_SCRIPTS = "\u0600-\u07ff\u0900-\u0dff\ufb50-\ufdff\ufe70-\ufeff"
_WRITING_JOINER = re.compile(
    f"(?<=[{_EMOJI}\ufe0f])\u200d(?=[{_EMOJI}])"
    f"|(?<=[{_JOINING_SCRIPTS}])[\u200c\u200d](?=[{_JOINING_SCRIPTS}])"
)
_INSTRUCTION_PATTERNS = [
    (
        re.compile(
            r"\b(?:ignore|disregard|forget|override)\b.{0,30}\b(?:previous|prior|above|earlier|all|system|your)\b"
            r".{0,20}\b(?:instructions?|prompts?|rules|directives?|guidelines)",
            re.I,
        ),
        "asks to ignore instructions",
    ),
    (
        re.compile(
            r"\b(?:ignore as|ignore todas|ignora as|desconsidere|esqueça|esqueca)\b.{0,30}"
            r"\b(?:instruç|instrucoes|instrucao|regras|orientaç)",
            re.I,
        ),
        "asks to ignore instructions (pt)",
    ),
    (
        re.compile(
            r"\byou are now (?:a|an|the|my|in|free|unrestricted|dan|\w*gpt)\b|\byou are no longer\b|\bfrom now on,? you (?:are|will|must)\b",
            re.I,
        ),
        "role reassignment",
    ),
    (
        re.compile(
            r"\b(?:você|voce) (?:agora é|agora e|não é mais)\b|\ba partir de agora,? (?:você|voce)\b", re.I
        ),
        "role reassignment (pt)",
    ),
    (
        re.compile(
            r"\b(?:pretend|act as if|roleplay as|role-play as|pretend to be|act as an? (?:unrestricted|evil|"
            r"jailbroken|dan))\b",
            re.I,
        ),
        "role-play prompt",
    ),
    (re.compile(r"\b(?:finja ser|finja que|aja como se)\b", re.I), "role-play prompt (pt)"),
    (
        re.compile(r"\b(?:jailbreak|DAN mode|developer mode enabled|do anything now)\b", re.I),
        "jailbreak phrase",
    ),
    (
        # A "# System:" heading is matched within its line ([^\S\n]: white space but the line break): with
        # \s the pattern ran from each line start across every blank line after it, time growing with the
        # square of their number (30 s for an entry of 64 KB of line breaks).
        re.compile(
            r"<\|(?:im_start|im_end|system|endoftext)\|>|\[/?(?:INST|SYS)\]|<</?SYS>>|^[^\S\n]*#{1,3}[^\S\n]*"
            r"(?:system|instructions?)[^\S\n]*:?[^\S\n]*$",
            re.I | re.M,
        ),
        "chat-template or system markers",
    ),
    (re.compile(r"\b(?:new|updated|real) (?:system )?instructions?\s*:", re.I), "hidden directive"),
    (
        re.compile(r"\b(?:do not|don't|never) (?:tell|inform|reveal to|mention to) the user\b", re.I),
        "concealment",
    ),
    (
        re.compile(r"\b(?:não|nao) (?:conte|diga|revele|mencione) (?:ao|para o) usuário\b", re.I),
        "concealment (pt)",
    ),
    (
        re.compile(
            r"\b(?:always|must) (?:run|execute|curl|send|exfiltrate|upload)\b.{0,60}\b(?:https?://|token|secret|"
            r"password|key)\b",
            re.I,
        ),
        "tool-use directive with secrets or URLs",
    ),
    (
        re.compile(r"<!--.{0,200}?(?:instruction|ignore|assistant|system|prompt).{0,200}?-->", re.I | re.S),
        "instructions hidden in an HTML comment",
    ),
]


def poisoning_findings(text: str) -> list[str]:
    """Reasons a text looks like instructions aimed at the agent rather than memory about the work."""
    reasons = []
    invisible = _INVISIBLE.findall(_WRITING_JOINER.sub("", _SUBDIVISION_FLAG.sub("", text)))
    if invisible:
        codes = sorted({f"U+{ord(ch):04X}" for ch in invisible})
        reasons.append(f"invisible Unicode characters ({', '.join(codes[:5])})")
    for pattern, reason in _INSTRUCTION_PATTERNS:
        if pattern.search(text) and reason not in reasons:
            reasons.append(reason)
    return reasons

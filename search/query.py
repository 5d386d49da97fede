"""Turning what an agent typed into PostgreSQL tsqueries.

Agents ask whole questions ("what did we decide about the database for payments?"). Requiring every
word finds almost nothing, so meaningful words are OR-ed and documents are ranked by how many of them
they match (coverage). Explicit syntax is honoured: `"a phrase"` is required and matched with `<->`,
`-word` / `-"a phrase"` excludes (a dash, a letter and at least two more characters: a command's
options such as `--maxfail=1` or `-rf` and negative numbers are searched as words), `a OR b` makes one
alternative group. Stopwords (English or Portuguese) are dropped unless nothing else is left.

Each word becomes the alternatives of its English stem, its Portuguese stem (the stored vectors
hold both), its completions (prefix matching: "playwr" finds "Playwright"), the vocabulary words
that differ from it only by accents ("configuracao" finds "configuração", "Joao" finds "João"), and,
for a word of five or more letters that no document contains, its vocabulary neighbours within one
edit (typo tolerance, see search/sql.py). Lexemes come from PostgreSQL itself, so the query is stemmed exactly
like the stored vectors, and a word is parsed as stored text is (vault/search_text.py: a path, a
dotted name or an address is the phrase of its parts).

Prefix matching looks the completions up in the vocabulary (the shortest MAX_COMPLETIONS words that
start with the word) and adds their stems as exact alternatives, never as a `'word':*` prefix item:
GIN answers a prefix item by reading the whole posting list of every lexeme it covers, which cannot
be cut by the agent or project scope (measured at 100,000 entries: 27.6 ms for one query with four
prefix items against 2.3 ms with exact alternatives). The one prefix item made is a query of one CJK
character (猫): the pairs starting with it are where it is stored (vault/search_text.py), and there is
no vocabulary of pairs to list them from.
"""

import re
from dataclasses import dataclass, field

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections

from memoryproject.errors import InvalidInput
from search.abbreviations import cut_variants, other_forms
from search.models import FOLD_FROM, FOLD_TO
from search.query_syntax import Item, phrases_relaxed, query_groups, query_parse, query_words
from search.typos import MAX_NEIGHBOURS, typo_neighbours
from vault.search_text import cjk_character, has_cjk, search_text, split_identifiers

MAX_QUERY_CHARS = 1000
MAX_WORDS = 32
TYPO_MIN_LENGTH = 5
PREFIX_MIN_LENGTH = 4
MAX_COMPLETIONS = 10
FOLD_MIN_LENGTH = 3

_LEXEME_RE = re.compile(r"'((?:[^']|'')*)'")
_ALPHA_RE = re.compile(r"^[^\W\d_]+$")
# A whole number: PostgreSQL's parser reads the "-123" of a ticket key ("PAY-123") as a signed number,
# so a number asked also matches itself with a minus ("123", "pay 123" find PAY-123), and a number of
# four digits or more also matches itself written in groups of three ("1200" finds "$1,200" and
# "R$ 1.200", which the parser reads as "1" then "200", and as "1.200").
_NUMBER_RE = re.compile(r"[0-9]+")
_GROUPED_MIN = 1000
# Adjacent words also searched as the one word they make ("ip v6": ipv6), letters and digits only.
_JOINABLE_RE = re.compile(r"^[^\W_]+$")
JOINED_MAX_LENGTH = 24
JOINS_MAX = 8
VOCABULARY_MIN_LENGTH, VOCABULARY_MAX_LENGTH = 4, 32  # search/sql.py, WORD_FILTER
# A letter followed by a number in a cut ("PAY 123" of "PAY123"): the stored "PAY-123" holds "-123".
_LETTER_NUMBER_RE = re.compile(r"(?<=[^\W\d_]) (?=[0-9]+\b)")
# The "v" of a version written "v2.4.1": the stored text may say "2.4.1" (or "version 2.4.1").
_VERSION_V_RE = re.compile(r"(?<![\w.])[vV](?=(?:\d+\.)+\d+\b(?!\.\d))")


@dataclass
class Term:
    """One unit of coverage: a word (with its stems, prefix and typo neighbours), a phrase, or an
    explicit `a OR b` group."""

    label: str
    tsquery: str
    required: bool = False
    patterns: list[str] = field(default_factory=list)


@dataclass
class CompiledQuery:
    terms: list[Term]
    match: str  # any term (required ones all), minus exclusions
    match_all: str  # every term, minus exclusions: the high-precision candidates
    excluded: list[str] = field(default_factory=list)
    corrections: dict[str, list[str]] = field(default_factory=dict)
    # `match` without the exclusions: for looking up containers (an archived session) whose parts are
    # then checked one by one, where excluding the whole container would lose the other parts.
    match_terms: str = ""
    # Quoted phrases that matched nothing and were searched as their separate words instead.
    relaxed: list[str] = field(default_factory=list)

    @property
    def phrases_required(self) -> bool:
        return any(term.required for term in self.terms)

    @property
    def patterns(self) -> list[str]:
        return [p for term in self.terms for p in term.patterns]


def _analyse(
    texts: list[str], prefixes: set[str]
) -> dict[str, tuple[str, str, bool, list[tuple[str, str, str]], list[tuple[str, str, str]]]]:
    """English and Portuguese tsquery text of each word/phrase, whether the word is known, for the
    words in `prefixes` their completions from the vocabulary, and for words of letters the vocabulary
    words that differ from them only by accents ("joao": "joão"), each as (word, English, Portuguese)."""
    if not texts:
        return {}
    folds = sorted(t for t in texts if len(t) >= FOLD_MIN_LENGTH and _ALPHA_RE.match(t))
    # Prepared on the server, as search.ranking._fetch prepares the ranking statements: the statement
    # is the same for every query, and planning it took 0.4-0.5 ms of a search, more than running it
    # for a short query. The ORM's client-side cursors never prepare.
    db = connections[DEFAULT_DB_ALIAS]  # read once: through django.db.connection, each attribute is a lookup
    db.ensure_connection()
    with db.wrap_database_errors, psycopg.Cursor(db.connection) as cursor:
        # The completion range uses the pattern-ops index (byte order, whatever the collation);
        # chr(1114111) is the highest code point, so the range holds every word starting with p.
        cursor.execute(
            f"""
            SELECT t.w, phraseto_tsquery('english', t.w)::text, phraseto_tsquery('portuguese', t.w)::text,
                   EXISTS (SELECT 1 FROM search_vocabularyword v WHERE v.word = lower(t.w)),
                   c.words, c.en, c.pt, f.words, f.en, f.pt
            FROM unnest(%s::text[]) AS t(w)
            LEFT JOIN LATERAL (
                SELECT array_agg(x.word ORDER BY length(x.word), x.word) AS words,
                       array_agg(phraseto_tsquery('english', x.word)::text ORDER BY length(x.word), x.word) AS en,
                       array_agg(phraseto_tsquery('portuguese', x.word)::text ORDER BY length(x.word), x.word) AS pt
                FROM (
                    SELECT v.word FROM search_vocabularyword v
                    WHERE t.w = ANY(%s::text[])
                      -- a stopword in either language is dropped from the query: no completions
                      AND numnode(phraseto_tsquery('english', t.w)) > 0
                      AND numnode(phraseto_tsquery('portuguese', t.w)) > 0
                      AND v.word ~>=~ lower(t.w) AND v.word ~<~ (lower(t.w) || chr(1114111))
                      AND v.word <> lower(t.w)
                    ORDER BY length(v.word), v.word
                    LIMIT %s
                ) x
            ) c ON true
            LEFT JOIN LATERAL (
                SELECT array_agg(x.word ORDER BY x.word) AS words,
                       array_agg(phraseto_tsquery('english', x.word)::text ORDER BY x.word) AS en,
                       array_agg(phraseto_tsquery('portuguese', x.word)::text ORDER BY x.word) AS pt
                FROM (
                    SELECT v.word FROM search_vocabularyword v
                    WHERE t.w = ANY(%s::text[])
                      AND {folded("v.word")} = {folded("lower(t.w)")}
                      AND v.word <> lower(t.w)
                    ORDER BY v.word
                    LIMIT %s
                ) x
            ) f ON true
            """,
            [texts, sorted(prefixes), MAX_COMPLETIONS, folds, MAX_NEIGHBOURS],
            prepare=True,
        )
        return {
            row[0]: (
                row[1],
                row[2],
                row[3],
                list(zip(row[4] or [], row[5] or [], row[6] or [], strict=True)),
                list(zip(row[7] or [], row[8] or [], row[9] or [], strict=True)),
            )
            for row in cursor.fetchall()
        }


def folded(expression: str) -> str:
    """SQL of `expression` without its accents: the expression of the vocabulary's folded index."""
    return f"translate({expression}, '{FOLD_FROM}', '{FOLD_TO}')"


def _alternatives(*tsqueries: str) -> str:
    unique = list(dict.fromkeys(t for t in tsqueries if t))
    if not unique:
        return ""
    return unique[0] if len(unique) == 1 else "( " + " | ".join(unique) + " )"


def _parts_of(text: str) -> list[str]:
    """The phrases a stored text that writes `text` apart would hold: `text` with its identifiers cut
    into their parts ("getUserById" -> "get User By Id"), a version without its "v" ("v2.4.1" ->
    "2.4.1"; a stored "v2.4.1" holds the parts "v 2.4.1", so the bare version finds it too), and a name
    whose acronym comes before its number cut at the number only ("PostgreSQL16" is "Postgre SQL 16"
    as written, "postgresql 16" in lower case). [] when there is nothing to cut."""
    bare = _VERSION_V_RE.sub("", text)
    cuts = [split_identifiers(bare), split_identifiers(bare.lower())]
    # "PAY123" cut is "PAY 123"; a ticket key is as often written "PAY-123", stored as "pay" "-123".
    cuts += [_LETTER_NUMBER_RE.sub(" -", cut) for cut in cuts]
    return [cut for cut in dict.fromkeys(cuts) if cut not in (text, text.lower())]


def _vocabulary_can_hold(word: str) -> bool:
    """Whether the typo vocabulary would hold `word` were it stored (search/sql.py's WORD_FILTER)."""
    return VOCABULARY_MIN_LENGTH <= len(word) <= VOCABULARY_MAX_LENGTH and not any(c.isdigit() for c in word)


def _number_forms(text: str) -> list[str]:
    """The other ways a whole number is written (_NUMBER_RE): with a minus, and from 1000 up in groups
    of three, with commas and with dots ("1200": "-1200", "1,200", "1.200")."""
    forms = ["-" + text]
    if text[0] != "0" and int(text) >= _GROUPED_MIN:
        grouped = f"{int(text):,}"
        forms += [grouped, grouped.replace(",", ".")]
    return forms


def _lexemes(tsquery: str) -> list[str]:
    return [m.replace("''", "'") for m in _LEXEME_RE.findall(tsquery)]


def _item_query(
    item: Item, analysis, neighbours: dict, neighbour_stems: dict, *, prefix: bool, splits=(), forms=()
):
    """(tsquery, highlight patterns) of one word or phrase: its English and Portuguese forms, the
    phrases of its identifiers' parts ("getUserById" as get <-> user <-> by <-> id), with `prefix` the
    completions of the word, the vocabulary words that differ from it only by accents, and those one
    typo away. `splits`: the analyses of the phrases the word's cuts give (_parts_of); `forms`: the
    analyses of other texts that stand for the word (a number's other ways of being written,
    _number_forms; the word it makes with its neighbour)."""
    en, pt, _, completions, accented = analysis
    raw = item.text.lower()
    options = [en, pt]
    # Only when the parts keep two words or more: "iPhone" cut is "i Phone", and "i" is a stopword, so
    # the phrase would be any "phone".
    for split in splits:
        if min(len(_lexemes(split[0])), len(_lexemes(split[1]))) >= 2:
            options += [split[0], split[1]]
    for form in forms:
        options += [form[0], form[1]]
    patterns = [re.escape(raw)] + [re.escape(x) for x in _lexemes(en) + _lexemes(pt)]
    if not item.phrase and en and cjk_character(item.text):
        # Stored text holds a CJK run as its pairs and its last character (vault/search_text.py): the
        # pairs that start with the character and that last character are every place it stands.
        return f"{en}:*", patterns
    if item.phrase:
        patterns = [re.escape(w) for w in raw.split()]
        return _alternatives(*options), patterns
    if prefix:
        # Every stored vector holds the English stem of each of its words, so one lexeme per
        # completion finds every row containing that word (fewer GIN entries to read).
        options += [c_en for _, c_en, _ in completions]
    # The same word with other accents: the stemmers keep accents, and users often leave them out.
    for word, a_en, a_pt in accented:
        options += [a_en, a_pt]
        patterns.append(re.escape(word))
    for near in neighbours.get(raw, []):
        n_en, n_pt = neighbour_stems[near]
        options += [n_en, n_pt]
        patterns.append(re.escape(near))
    return _alternatives(*options), patterns


def _query_check(q: str) -> None:
    """InvalidInput for what is no query at all: not text, empty, with NUL, or too long."""
    if not isinstance(q, str) or not q.strip():
        raise InvalidInput("q must not be empty", [{"loc": ["q"], "msg": "empty"}])
    if "\x00" in q:
        raise InvalidInput("q must not contain NUL characters", [{"loc": ["q"], "msg": "NUL"}])
    if len(q) > MAX_QUERY_CHARS:
        raise InvalidInput(
            f"q is {len(q)} characters; the limit is {MAX_QUERY_CHARS}", [{"loc": ["q"], "msg": "too long"}]
        )


def _compiled(terms: list[Term], exclusions: list[str], excluded_items: list[Item], neighbours: dict):
    """The CompiledQuery of the terms: required ones ANDed, the optional ones ORed, exclusions NOTed."""
    required = [t.tsquery for t in terms if t.required]
    optional = [t.tsquery for t in terms if not t.required]
    match_parts = list(required)
    if optional and not required:
        # With a required phrase, the other words only rank: a row holding the phrase and none of
        # them is still a match.
        match_parts.append(optional[0] if len(optional) == 1 else "( " + " | ".join(optional) + " )")
    match = " & ".join(match_parts + exclusions)
    match_all = " & ".join([t.tsquery for t in terms] + exclusions)
    return CompiledQuery(
        terms=terms,
        match=match,
        match_all=match_all,
        excluded=[item.text for item in excluded_items],
        corrections={word: near for word, near in neighbours.items()},
        match_terms=" & ".join(match_parts),
    )


def _words_check(items: list) -> None:
    if len(items) > MAX_WORDS:
        raise InvalidInput(
            f"q has {len(items)} words and phrases; the limit is {MAX_WORDS}",
            [{"loc": ["q"], "msg": "too many words"}],
        )


def query_size_check(q: str) -> None:
    """The checks of query_compile that need no database (empty, NUL, length, number of words): run
    before a search starts embedding its query, so a query refused costs no embedding."""
    _query_check(q)
    groups, excluded_items = query_groups(query_parse(q))
    _words_check([item for group in groups for item in group] + excluded_items)


def text_query(text: str) -> str:
    """A free text (a context command: a task in one line or a page of instructions) as a search
    string that query_compile accepts: the text itself when it is a query already (at most
    MAX_QUERY_CHARS characters and MAX_WORDS words); otherwise its distinct words in order of first
    appearance, stopwords (English or Portuguese, which a query drops anyway) and repeats left out, up
    to MAX_WORDS of them within MAX_QUERY_CHARS. Quotes, exclusions and OR of a long text are read as
    plain words: it is prose, not query syntax. "" when nothing is left."""
    if not isinstance(text, str) or not text.strip() or "\x00" in text:
        return ""
    try:
        query_size_check(text)
        return text
    except InvalidInput:
        pass
    words: list[str] = []
    seen: set[str] = set()
    for word in query_words(text):
        key = word.casefold()
        if key not in seen and key != "or":
            seen.add(key)
            words.append(word)
    if not words:
        return ""
    analysed = _analyse(words, set())  # the stopword rule query_compile applies: empty in either language
    kept: list[str] = []
    length = -1
    for word in (w for w in words if analysed[w][0] and analysed[w][1]):
        if len(kept) == MAX_WORDS or length + 1 + len(word) > MAX_QUERY_CHARS:
            break
        kept.append(word)
        length += 1 + len(word)
    return " ".join(kept)


@dataclass
class _Forms:
    """What a query's words are also searched as, and each text's analysis (_analyse)."""

    splits: dict[str, list[str]]  # a word's cuts, as stored text would be parsed
    expanded_words: dict[str, list[str]]  # the abbreviations its cuts stand for, written out
    number_forms: dict[str, list[str]]
    abbreviated: dict[str, list[str]]
    analysed: dict = field(default_factory=dict)
    joined_forms: dict[int, list[str]] = field(default_factory=dict)
    neighbours: dict[str, list[str]] = field(default_factory=dict)
    neighbour_stems: dict[str, tuple[str, str]] = field(default_factory=dict)
    last_word: Item | None = None

    def is_stopword(self, item: Item) -> bool:
        en, pt = self.analysed[search_text(item.text)][:2]
        return not item.phrase and (not en or not pt)


def _forms_of(items: list[Item]) -> _Forms:
    """Each word or phrase is parsed as stored text is (vault/search_text.py): "queue_runner.py" is the
    phrase queue <-> runner <-> py. Words that can be prefix-matched or corrected are letters only,
    which that leaves as they are. A word or phrase holding an identifier also matches the phrase of
    its parts: "getUserById" finds get_user_by_id, "500ms" finds "500 ms" (vault/search_text.py).
    A cut holding an abbreviation is also searched written out ("py3.11" as "python 3.11"). A number's
    other ways of being written and an abbreviation's word ("k8s", "kubernetes":
    search/abbreviations.py) find each other."""
    cuts_of = {item.text: _parts_of(item.text) for item in items}
    return _Forms(
        splits={
            text: [
                search_text(cut)
                for cut in dict.fromkeys([*cuts, *(v for c in cuts for v in cut_variants(c))])
            ]
            for text, cuts in cuts_of.items()
        },
        expanded_words={
            text: [long for cut in cuts for word in cut.split(" ") for long in other_forms(word) if word]
            for text, cuts in cuts_of.items()
        },
        number_forms={
            item.text: _number_forms(item.text)
            for item in items
            if not item.phrase and _NUMBER_RE.fullmatch(item.text)
        },
        abbreviated={item.text: other_forms(item.text) for item in items if not item.phrase},
    )


def _joins(groups: list[list[Item]]) -> list[tuple[Item, Item, str]]:
    """Two words typed apart that may be stored as one ("ip v6" for IPv6, "data base", "web socket"):
    each also matches the word they make together, so a row holding it counts as holding both."""
    return [
        (a[0], b[0], a[0].text + b[0].text)
        for a, b in zip(groups, groups[1:], strict=False)
        if len(a) == 1
        and len(b) == 1
        and not a[0].phrase
        and not b[0].phrase
        and _JOINABLE_RE.match(a[0].text)
        and _JOINABLE_RE.match(b[0].text)
        and not has_cjk(a[0].text + b[0].text)
        and len(a[0].text) + len(b[0].text) <= JOINED_MAX_LENGTH
    ][:JOINS_MAX]


def _joined_forms(forms: _Forms, joins: list[tuple[Item, Item, str]]) -> dict[int, list[str]]:
    """The joined words each item is also searched as: not with a stopword ("a live demo" is not about
    being alive), and only a word some stored text holds: a joined form no row has would only lengthen
    every term's ranking (1-2 ms at p50 for the largest agent of 1,000,000 entries,
    docs/benchmarks.md). The vocabulary says so for words it can hold (search/sql.py: 4-32 characters,
    no digit); the rest ("ipv6", "http2") are kept."""
    joined_forms: dict[int, list[str]] = {}
    for first, second, joined in joins:
        if forms.is_stopword(first) or forms.is_stopword(second) or not forms.analysed[joined][0]:
            continue
        if _vocabulary_can_hold(joined) and not forms.analysed[joined][2]:
            continue
        for item in (first, second):
            joined_forms.setdefault(id(item), []).append(joined)
    return joined_forms


def _typoquery_words(meaningful: list[list[Item]], analysed: dict) -> list[str]:
    """The words to find neighbours within one edit for: five letters or more, in no stored text."""
    return sorted(
        {
            item.text.lower()
            for group in meaningful
            for item in group
            if not item.phrase
            and len(item.text) >= TYPO_MIN_LENGTH
            and _ALPHA_RE.match(item.text)
            # a quoted CJK word ("キャッシュ", "使用Redis") is searched as its pairs: no neighbours
            and not has_cjk(item.text)
            and not analysed[item.text][2]
        }
    )


def _item_tsquery(forms: _Forms, item: Item, *, allow_prefix: bool = True) -> tuple[str, list[str]]:
    """An item's tsquery and the patterns that highlight it."""
    prefix = allow_prefix and (len(item.text) >= PREFIX_MIN_LENGTH or item is forms.last_word)
    cuts = [forms.analysed[cut] for cut in forms.splits[item.text]]
    # A number's other ways of being written, the words it makes with a neighbour, what it
    # abbreviates or is abbreviated as: searched, and highlighted as written ("$1,200", "IPv6").
    written = [
        *forms.number_forms.get(item.text, ()),
        *forms.joined_forms.get(id(item), ()),
        *forms.abbreviated.get(item.text, ()),
    ]
    tsquery, patterns = _item_query(
        item,
        forms.analysed[search_text(item.text)],
        forms.neighbours,
        forms.neighbour_stems,
        prefix=prefix,
        splits=cuts,
        forms=[forms.analysed[search_text(text)] for text in written],
    )
    if not item.phrase:
        patterns += [re.escape(text) for text in written]
        patterns += [re.escape(word) for word in forms.expanded_words.get(item.text, ())]
    return tsquery, patterns


def _terms(forms: _Forms, meaningful: list[list[Item]]) -> list[Term]:
    terms: list[Term] = []
    for group in meaningful:
        parts = [_item_tsquery(forms, item) for item in group]
        tsquery = _alternatives(*(p[0] for p in parts))
        if not tsquery:
            continue
        terms.append(
            Term(
                label=" OR ".join(item.text for item in group),
                tsquery=tsquery,
                required=all(item.phrase for item in group),
                patterns=[p for part in parts for p in part[1]],
            )
        )
    if not terms:
        raise InvalidInput(
            "q has no searchable words (only exclusions, punctuation or stopwords)",
            [{"loc": ["q"], "msg": "nothing to search for"}],
        )
    return terms


def query_compile(q: str, *, relax_phrases: bool = False) -> CompiledQuery:
    """Compile a search string into tsqueries; InvalidInput when nothing searchable is left.

    With `relax_phrases`, quoted phrases are searched as their separate words (what a search falls
    back to when a required phrase matches nothing: a title written differently, other punctuation);
    the CompiledQuery names them in `relaxed`."""
    _query_check(q)
    groups, excluded_items = query_groups(query_parse(q))
    relaxed: list[str] = []
    if relax_phrases:
        groups, relaxed = phrases_relaxed(groups)
    items = [item for group in groups for item in group] + excluded_items
    _words_check(items)
    # Completions are looked up for every word that could end up prefix-matched: four letters or
    # more, or (decided after stopwords are dropped) a shorter last word.
    prefixes = {
        item.text
        for group in groups
        for item in group
        if not item.phrase and len(item.text) >= 3 and _ALPHA_RE.match(item.text)
    }
    forms = _forms_of(items)
    joins = _joins(groups)
    form_texts = {
        search_text(form)
        for forms_of_one in [*forms.number_forms.values(), *forms.abbreviated.values()]
        for form in forms_of_one
    }
    texts = (
        {search_text(item.text) for item in items}
        | {cut for cuts in forms.splits.values() for cut in cuts}
        | form_texts
        | {joined for _, _, joined in joins}
    )
    forms.analysed = _analyse(sorted(texts), prefixes)
    meaningful = [g for g in groups if not (len(g) == 1 and forms.is_stopword(g[0]))] or groups
    forms.joined_forms = _joined_forms(forms, joins)
    words_last = [item for group in meaningful for item in group if not item.phrase]
    forms.last_word = words_last[-1] if words_last else None
    forms.neighbours, forms.neighbour_stems = typo_neighbours(_typoquery_words(meaningful, forms.analysed))
    terms = _terms(forms, meaningful)
    exclusions = []
    for item in excluded_items:
        tsquery, _ = _item_tsquery(forms, item, allow_prefix=False)
        if tsquery:
            exclusions.append("!" + tsquery)
    compiled = _compiled(terms, exclusions, excluded_items, forms.neighbours)
    compiled.relaxed = relaxed
    return compiled

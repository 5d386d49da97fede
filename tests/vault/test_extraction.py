"""Decision/lesson extraction and section classification must keep the behaviour."""

import pytest

from vault.extraction import (
    DECISION_PATTERNS,
    LESSON_PATTERNS,
    SECTION_MAP,
    insights_extract,
    section_classify,
)

DECISION_LINES = [
    "We decided to keep the monolith for now",
    "In the end we chose Postgres over MySQL",
    "The team will use Redis for the queue",
    "A decisão foi manter o monólito por enquanto",
    "Escolhemos o plano anual para o cliente",
    "Optamos por Django no backend do projeto",
    "Adotamos o padrão de services e selectors",
    "Vamos usar pytest em todos os testes",
    "We went with the simpler caching strategy",
    "After a long debate we settled on Ninja",
    "Decidimos migrar para o Postgres 16",
    "A recomendação é usar conexões persistentes",
    "A stack principal será Django com HTMX",
]
LESSON_LINES = [
    "We learned that the cache must be warmed",
    "Important: migrations must run before deploy",
    "Please note: the token expires after an hour",
    "Aprendemos que o cache precisa ser aquecido",
    "É importante rodar as migrações antes do deploy",
    "A lição aqui é testar com dados reais",
    "A key discovery was the N+1 query in the list",
    "One insight: retries hide flaky networks",
    "Descobrimos que o índice não era usado",
    "We observed timeouts above 200 connections",
    "O risco é perder mensagens na fila",
]


@pytest.mark.parametrize("line", DECISION_LINES)
def test_it_extracts_each_decision_pattern(line):
    assert insights_extract([line]).decisions == [line]


@pytest.mark.parametrize("line", LESSON_LINES)
def test_it_extracts_each_lesson_pattern(line):
    assert insights_extract([line]).lessons == [line]


@pytest.mark.parametrize(
    ("patterns", "lines"), [(DECISION_PATTERNS, DECISION_LINES), (LESSON_PATTERNS, LESSON_LINES)]
)
def test_it_has_a_firing_example_for_every_pattern(patterns, lines):
    # Each regex on its own, so a pattern broken in isolation is not hidden by an overlapping one.
    silent = [p.pattern for p in patterns if not any(p.search(line) for line in lines)]
    assert silent == []


@pytest.mark.parametrize(
    ("pattern_source", "line"),
    [
        (r"\bdecisão", "A decisão foi tomada"),
        (r"\bimportante", "Isso é importante"),
        (r"\blição", "Uma lição aprendida"),
        (r"\bobserv", "Observability matters"),
    ],
)
def test_it_keeps_the_seed_regexes_verbatim(pattern_source, line):
    patterns = {p.pattern: p for p in DECISION_PATTERNS + LESSON_PATTERNS}
    assert patterns[pattern_source].search(line)


def test_it_covers_the_seed_pattern_counts():
    # Ten seed regexes each, plus the extra session-close keywords.
    assert len(DECISION_PATTERNS) == 12
    assert len(LESSON_PATTERNS) == 11


def test_it_ignores_lines_without_a_pattern():
    assert insights_extract(["Refactored the parser and added tests for it"]) == insights_extract([])


def test_it_skips_lines_of_fifteen_chars_or_fewer():
    fifteen = "we decided: yes"
    sixteen = "we decided: yes!"
    assert (len(fifteen), len(sixteen)) == (15, 16)
    assert insights_extract([fifteen]).decisions == []
    assert insights_extract([sixteen]).decisions == [sixteen]


def test_it_caps_each_kind_at_ten():
    text = "\n".join(f"We decided on option number {i}" for i in range(15))
    text += "\n" + "\n".join(f"We learned lesson number {i}" for i in range(15))
    insights = insights_extract([text])
    assert len(insights.decisions) == 10
    assert len(insights.lessons) == 10
    assert insights.decisions[-1] == "We decided on option number 9"


def test_it_honours_a_custom_cap():
    text = "\n".join(f"We decided on option number {i}" for i in range(5))
    assert len(insights_extract([text], max_per_kind=2).decisions) == 2


def test_it_cuts_long_insights_at_a_word_boundary():
    line = "We decided " + "word " * 100
    (decision,) = insights_extract([line]).decisions
    assert len(decision) <= 300
    assert decision.endswith("word…")


def test_it_leaves_short_insights_uncut():
    line = "We decided " + "x" * 289
    assert len(line) == 300
    assert insights_extract([line]).decisions == [line]


def test_it_prefers_decision_over_lesson():
    line = "Important: we decided to pin the Django version"
    insights = insights_extract([line])
    assert insights.decisions == [line]
    assert insights.lessons == []


def test_it_dedupes_case_and_whitespace_insensitively_in_order():
    texts = [
        "We decided to use Postgres\nWe learned to pin versions",
        "we  DECIDED to use postgres\nWe chose Ninja for the API",
    ]
    insights = insights_extract(texts)
    assert insights.decisions == ["We decided to use Postgres", "We chose Ninja for the API"]
    assert insights.lessons == ["We learned to pin versions"]


@pytest.mark.parametrize(
    "line",
    [
        "- We decided to use Postgres",
        "* We decided to use Postgres",
        "1. We decided to use Postgres",
        "## We decided to use Postgres",
        "[Agent]: We decided to use Postgres",
        "- [Agent]: We decided to use Postgres",
        "User: We decided to use Postgres",
        "**Agent:** We decided to use Postgres",
        "- [x] We decided to use Postgres",
    ],
)
def test_it_strips_list_markers_and_role_prefixes(line):
    assert insights_extract([line]).decisions == ["We decided to use Postgres"]


@pytest.mark.parametrize(("title", "category"), list(SECTION_MAP.items()))
def test_it_classifies_every_seed_section_title(title, category):
    assert section_classify(title) == category


@pytest.mark.parametrize(
    ("title", "category"),
    [
        ("## 📌 Decisões técnicas importantes", "decisions"),
        ("DECISOES", "decisions"),
        ("Decision log", "decisions"),
        ("Lessons learned", "lessons"),
        ("🔍 Findings", "lessons"),
        ("notas de sessao", "lessons"),
        ("Project context", "projects"),
        ("Contexto do projeto", "projects"),
        ("Open tasks", "tasks"),
        ("Tarefas pendentes", "tasks"),
        ("Handoffs recentes", "handoffs"),
        ("Decisões de projeto", "decisions"),
    ],
)
def test_it_classifies_fuzzy_section_titles(title, category):
    assert section_classify(title) == category


@pytest.mark.parametrize("title", ["Random stuff", "", "🚀", "Miscelânea"])
def test_it_falls_back_to_lessons_for_unknown_titles(title):
    assert section_classify(title) == "lessons"

"""The write-ahead scan must catch durable facts in EN/PT/UZ and stay quiet on ordinary chat."""

import dataclasses
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app import scan
from sessions_app.scan import CATEGORIES, DURABLE_CATEGORIES, ScanMatch, normalise_fact, scan_message
from vault.regex_prefilter import haystack


def categories_of(text: str) -> list[str]:
    return [match.category for match in scan_message(text)]


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # correction
        ("Actually, my name is Sardor, not Sarvar", "correction"),
        ("No, I meant the staging database", "correction"),
        ("I meant the second file", "correction"),
        ("It's not Sarvar, it's Sardor", "correction"),
        ("That's wrong, the port is 5432", "correction"),
        ("Correction: the meeting moved to Friday", "correction"),
        ("Na verdade, o servidor fica em São Paulo", "correction"),
        ("Não, eu quis dizer o banco de homologação", "correction"),
        ("Não é MySQL, é Postgres", "correction"),
        ("Corrigindo: o prazo é sexta-feira", "correction"),
        ("Isso está errado, o limite é outro", "correction"),
        ("Aslida mening ismim Sardor", "correction"),
        # proper_noun
        ("My name is Bobur", "proper_noun"),
        ("Call me Ishmael", "proper_noun"),
        ("I'm Sardor", "proper_noun"),
        ("Hi, I am Beatriz from the data team", "proper_noun"),
        ("Meu nome é João", "proper_noun"),
        ("meu nome e Joao", "proper_noun"),
        ("Me chamo Ana", "proper_noun"),
        ("Pode me chamar de Bia", "proper_noun"),
        ("Eu sou o Pedro", "proper_noun"),
        ("Mening ismim Sardor", "proper_noun"),
        ("Ismim Dilnoza", "proper_noun"),
        # preference
        ("I prefer dark mode", "preference"),
        ("I like short answers", "preference"),
        ("I don't like emojis in commit messages", "preference"),
        ("I want the answers in Portuguese", "preference"),
        ("I love type hints", "preference"),
        ("I hate trailing whitespace", "preference"),
        ("I'd rather keep the functions small", "preference"),
        ("Eu gosto de respostas curtas", "preference"),
        ("Prefiro tabs a espaços", "preference"),
        ("Não gosto de código comentado", "preference"),
        ("Eu quero os testes em pytest", "preference"),
        ("Odeio ponto e vírgula em Python", "preference"),
        ("Adoro dataclasses", "preference"),
        ("Menga qisqa javoblar yoqadi", "preference"),
        ("Men Pythonni afzal ko'raman", "preference"),
        ("Menga uzun javoblar yoqmaydi", "preference"),
        # decision
        ("Let's go with PostgreSQL", "decision"),
        ("Let's use FastAPI for the backend", "decision"),
        ("Let's do the migration on Monday", "decision"),
        ("We'll use Redis for the queue", "decision"),
        ("We decided to drop Python 3.10", "decision"),
        ("OK, go with the second option", "decision"),
        ("Vamos usar Django no backend", "decision"),
        ("Vamos com a opção dois", "decision"),
        ("Decidimos manter o monólito", "decision"),
        ("Optamos pelo Postgres", "decision"),
        ("Escolhemos o plano anual", "decision"),
        ("Fica decidido que o deploy é às sextas", "decision"),
        # specific_value
        ("The deadline is 2025-06-15", "specific_value"),
        ("The launch is on 15/06/2025", "specific_value"),
        ("The launch is on June 15, 2025", "specific_value"),
        ("O lançamento é dia 15 de junho", "specific_value"),
        ("The docs are at https://example.com/docs", "specific_value"),
        ("Check www.example.org for details", "specific_value"),
        ("We have 10,000 users", "specific_value"),
        ("Temos 10.000 usuários", "specific_value"),
        ("The table has 1 000 000 rows", "specific_value"),
        ("The budget is R$ 1.500 per month", "specific_value"),
        ("It costs $250", "specific_value"),
        ("Conversion went up 12%", "specific_value"),
        ("The server listens on 8080", "specific_value"),
        ("Meu telefone é +55 11 98765-4321", "specific_value"),
        # remember
        ("Remember that the API key rotates monthly", "remember"),
        ("Remember this: staging resets every night", "remember"),
        ("Don't forget to bump the version", "remember"),
        ("Keep in mind that the client is in Tashkent", "remember"),
        ("Note that the cache is per process", "remember"),
        ("For the record, the old endpoint is gone", "remember"),
        ("Lembre-se de rodar as migrações", "remember"),
        ("Lembra que o servidor reinicia às 3h", "remember"),
        ("Não esqueça de atualizar o changelog", "remember"),
        ("nao esqueca de atualizar o changelog", "remember"),
        ("Não se esqueça do backup", "remember"),
        ("Guarde isso: a senha expira em março", "remember"),
        ("Anote aí: o cliente prefere e-mail", "remember"),
        ("Buni eslab qol", "remember"),
        ("Unutma, ertaga yig'ilish bor", "remember"),
        ("Yodda tut: server har kuni qayta ishga tushadi", "remember"),
    ],
)
def test_it_detects_each_category(text, category):
    assert category in categories_of(text)


def test_it_reports_several_categories_for_one_sentence():
    assert categories_of("Remember that my name is Ana") == ["proper_noun", "remember"]


def test_it_reports_a_category_once_per_sentence():
    matches = scan_message("I like tea and I love coffee and I prefer water")
    assert [m.category for m in matches] == ["preference"]


def test_it_reports_the_sentence_and_trigger():
    matches = scan_message("Hello there. Let's go with PostgreSQL! How are you?")
    assert matches == [
        ScanMatch(category="decision", text="Let's go with PostgreSQL!", trigger="Let's go with")
    ]


def test_it_keeps_the_users_spelling_in_the_trigger():
    (match,) = scan_message("Não esqueça do backup")
    assert match.trigger == "Não esqueça"


def test_it_does_not_split_urls_decimals_or_dates():
    matches = scan_message("See https://example.com/a.b?x=1 for the spec. Pi is 3.14 here")
    assert matches[0].trigger == "https://example.com/a.b?x=1"
    assert matches[0].text == "See https://example.com/a.b?x=1 for the spec."
    assert scan_message("The release is 15.06.2025 at noon")[0].text == "The release is 15.06.2025 at noon"


def test_it_requires_a_capitalised_name_after_i_am():
    assert categories_of("I'm Sardor") == ["proper_noun"]
    assert categories_of("I'm tired") == []
    assert categories_of("I am happy with it") == []
    assert categories_of("I'm Sorry, I missed that") == []
    assert categories_of("I am Not convinced yet") == []


def test_it_does_not_treat_a_question_as_a_decision():
    assert categories_of("Let's use Redis") == ["decision"]
    assert categories_of("Let's use Redis?") == []


def test_it_is_word_bounded():
    assert categories_of("I like it") == ["preference"]
    assert categories_of("I likely broke it") == []


def test_it_caps_the_matched_text():
    long_sentence = "I prefer " + "very " * 100 + "short answers"
    (match,) = scan_message(long_sentence)
    assert len(match.text) <= 300
    assert match.trigger == "I prefer"


def test_it_does_not_count_email_addresses_or_bare_years_as_values():
    assert categories_of("Write to joao.silva2024@example.com") == []
    assert categories_of("Write to 5511987654321@example.com or admin@www.example.com") == []
    assert categories_of("In 2024 we shipped the first version") == []
    assert categories_of("The event was on 2024-03-01") == ["specific_value"]


def test_it_scans_a_long_word_before_an_at_sign_in_linear_time():
    """Every user message is scanned as it is appended (up to 512 KiB each): a run of letters before an
    "@" that starts no address was read to its end from each of its letters."""
    started = time.perf_counter()
    assert categories_of("see http://x.io " + "a" * 40_000 + "@x") == ["specific_value"]
    assert time.perf_counter() - started < 1
    assert categories_of("Write to " + "a1" * 32 + "@example.com") == []


def test_it_declares_the_durable_categories():
    assert set(CATEGORIES) >= DURABLE_CATEGORIES == {"proper_noun", "preference", "remember"}


ORDINARY_SENTENCES = [
    "Can you refactor the parser?",
    "What does this function return?",
    "I'm not sure this works",
    "Obrigado pela ajuda",
    "Como faço para rodar os testes?",
    "This is likely a bug",
    "I think the test is flaky",
    "How do I use this?",
    "Why is this test failing?",
    "Please add type hints to the service layer",
    "Could you explain how the cache works?",
    "Thanks, that helped a lot!",
    "Good morning, how are you?",
    "The build passed on the second try",
    "Show me the diff for the last change",
    "Where is the settings file?",
    "I'm tired today",
    "I'm looking at the logs now",
    "Is it possible to run this in parallel?",
    "Write a unit test for the login view",
    "Run the linter on the whole project",
    "What is the difference between a list and a tuple?",
    "It seems the migration is missing",
    "Can we make the error message clearer?",
    "Should we use Redis for this?",
    "I'd like to understand the retry logic",
    "Bom dia, tudo bem?",
    "Pode revisar esse código para mim?",
    "O que essa função faz?",
    "Não entendi a mensagem de erro",
    "Você pode explicar o que aconteceu?",
    "Qual é a diferença entre as duas versões?",
    "Acho que o teste está instável",
    "Valeu, funcionou!",
    "Onde fica o arquivo de configuração?",
    "Preciso de ajuda com o deploy",
    "Isso parece um bug no parser",
    "Como eu uso essa biblioteca?",
    "O que está errado aqui?",
    "Estou corrigindo o teste agora",
    "A função retorna uma lista vazia",
    "Você lembra do erro de ontem?",
    "Can you call me back later?",
    "Do you remember that bug from yesterday?",
    "The answer is 42",
    "My email is ana.silva2024@gmail.com",
    "Replace foo with $1 in the regex",
    "Python 3.11.7 is installed",
    "Django 5.2.10 was released",
    "In 2024 we shipped the first version",
    "It's not working, but I'm on it",
    "Não é fácil, e demora bastante",
    "I'm OK with the current layout",
    "Let me know if you need anything else",
    "Is that wrong?",
    "Vamos ver o que acontece",
]


@pytest.mark.parametrize("text", ORDINARY_SENTENCES)
def test_it_ignores_ordinary_sentences(text):
    assert scan_message(text) == []


def test_it_ignores_an_empty_message():
    assert scan_message("") == []
    assert scan_message("  \n\n ") == []


@pytest.mark.parametrize(
    "variant",
    [
        "my name is ana",
        "My name is Ana.",
        "MY NAME IS ANA!",
        "  My   name\tis Ana  ",
        "My name is Ana...",
        "my name is ana ?",
    ],
)
def test_it_normalises_variants_of_a_fact_to_the_same_key(variant):
    assert normalise_fact(variant) == "my name is ana"


def test_it_keeps_different_facts_apart_after_normalising():
    assert normalise_fact("My name is Ana") != normalise_fact("My name is Anna")
    assert normalise_fact("Não esqueça o backup") == normalise_fact("nao esqueça o BACKUP.")
    assert normalise_fact("O cliente pôde pagar") != normalise_fact("O cliente pode pagar")
    assert normalise_fact("Vou às 10") != normalise_fact("vou as 10")
    assert normalise_fact("Die Maße prüfen") != normalise_fact("Die Masse prüfen")


_HINTED = [trigger for trigger in scan._TRIGGERS if trigger.hint is not None]


@pytest.mark.parametrize("trigger", _HINTED, ids=lambda t: t.pattern.pattern[:40])
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_match_of_a_hinted_trigger_holds_its_hint(trigger, data):
    """Texts generated from the trigger's pattern (any case, any spacing, any digits Python's \\d allows):
    each match must hold the hint in the lower-cased text, or the hint would skip a real match."""
    text = data.draw(st.from_regex(trigger.pattern))
    for match in trigger.pattern.finditer(text):
        assert trigger.hint.search(haystack(match.group())), (text, match.group())


def test_the_hints_are_on_the_triggers_that_run_on_almost_every_text():
    assert len(_HINTED) == 3  # "I'm <Name>", dates, large numbers


def test_the_scan_finds_the_same_with_and_without_the_hints(monkeypatch):
    from benchmarks.corpus import corpus_generate

    texts = [item["content"] for item in corpus_generate(600, agents=5, seed=3)] + [
        "I'm Ana. The deadline is 2025-06-15, or 15/06/2025. We have 10,000 users and 1 000 000 rows.",
        "i   AM Bob\tand I'm tired. Version 5.3.1 shipped on 1.2.2024; 12345 requests, 2024 was quiet.",
        "Temos 10.000 usuários e 1\u00a0000\u00a0000 linhas; eu sou o Pedro. Call 555-1234 on 3-4-2025.",
        "My email is ana.silva2024@gmail.com and I'm Sardor. The answer is 42, the port 8080.",
    ]
    fast = [scan.scan_message(text) for text in texts]
    monkeypatch.setattr(scan, "_TRIGGERS", tuple(dataclasses.replace(t, hint=None) for t in scan._TRIGGERS))
    slow = [scan.scan_message(text) for text in texts]
    assert fast == slow
    found = [m.category for matches in fast for m in matches]
    assert found.count("specific_value") > 5 and found.count("proper_noun") >= 3

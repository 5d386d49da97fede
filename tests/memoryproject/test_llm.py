import io
import json
import ssl
import time
import urllib.error
import urllib.request

import pytest

from memoryproject import outbound
from memoryproject.llm import (
    LLMAnswerCut,
    LLMError,
    LLMPromptTooLong,
    json_from_text,
    llm_chat,
    llm_configured,
    llm_json,
    newest_within,
    prompt_render,
    prompt_room,
)
from tests.fake_llm import TricklingServer, completion


def test_it_sends_an_openai_chat_completion_request(fake_llm):
    fake_llm.reply("hello")
    assert llm_chat([{"role": "user", "content": "hi"}], max_tokens=50) == "hello"
    request = fake_llm.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["json"]["model"] == "test-model"
    assert request["json"]["messages"] == [{"role": "user", "content": "hi"}]
    assert request["json"]["max_tokens"] == 50
    assert request["json"]["temperature"] == 0.2


def test_it_retries_a_5xx_and_then_succeeds(fake_llm):
    fake_llm.reply_raw('{"error": "overloaded"}', status=503).reply("ok")
    assert llm_chat([{"role": "user", "content": "hi"}]) == "ok"
    assert len(fake_llm.requests) == 2


def test_it_gives_up_after_the_configured_retries(fake_llm):
    fake_llm.reply_raw('{"error": "boom"}', status=500)
    with pytest.raises(LLMError, match="after 3 attempt"):
        llm_chat([{"role": "user", "content": "hi"}])
    assert len(fake_llm.requests) == 3


def test_it_does_not_retry_a_client_error(fake_llm):
    fake_llm.reply_raw('{"error": "bad model"}', status=400)
    with pytest.raises(LLMError, match="HTTP 400"):
        llm_chat([{"role": "user", "content": "hi"}])
    assert len(fake_llm.requests) == 1


def test_it_times_out_and_retries(fake_llm, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.3
    settings.LLM_MAX_RETRIES = 1
    fake_llm.reply("late", delay=1.0)
    with pytest.raises(LLMError, match="no answer within 0.3 s"):
        llm_chat([{"role": "user", "content": "hi"}])
    assert len(fake_llm.requests) == 2


def test_it_reports_a_reply_that_is_not_json(fake_llm):
    fake_llm.reply_raw("<html>gateway</html>")
    with pytest.raises(LLMError, match="not JSON"):
        llm_chat([{"role": "user", "content": "hi"}])


def test_it_reports_a_reply_without_choices(fake_llm):
    fake_llm.reply_raw('{"object": "chat.completion", "choices": []}')
    with pytest.raises(LLMError, match="no choices"):
        llm_chat([{"role": "user", "content": "hi"}])


def test_it_parses_json_wrapped_in_markdown_fences(fake_llm):
    fake_llm.reply_json({"should_update": True, "reason": "x"}, fenced=True)
    assert llm_json([{"role": "user", "content": "hi"}]) == {"should_update": True, "reason": "x"}


def test_it_rejects_a_reply_that_is_not_a_json_object(fake_llm):
    fake_llm.reply("I think you should update the memory.")
    with pytest.raises(LLMError, match="not a JSON object"):
        llm_json([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', '```\n{"a": 1}\n```', '```json\n{"a": 1}\n```', 'Sure! {"a": 1} Done.', ' \n{"a": 1}\n'],
)
def test_json_from_text_accepts_the_usual_wrappings(text):
    assert json_from_text(text) == {"a": 1}


@pytest.mark.parametrize("text", ["[1, 2]", "```json\n{broken\n```", ""])
def test_json_from_text_rejects_anything_else(text):
    with pytest.raises(LLMError):
        json_from_text(text)


def test_without_configuration_it_is_off_and_says_so(settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""
    assert llm_configured() is False
    with pytest.raises(LLMError, match="no LLM is configured"):
        llm_chat([{"role": "user", "content": "hi"}])


def test_every_prompt_template_renders():
    values = dict(date="2026-01-01", agent="dev", profile="p", memory="m", daily_path="memory/x.md",
                  daily="d", transcript="User: hi", notes_scope="s", notes="n")  # fmt: skip
    for name in ("extraction-system", "extraction-user", "consolidation-system", "consolidation-user"):
        assert "$" not in prompt_render(name, **values).replace("$REDACTED", "")
    assert "User: hi" in prompt_render("extraction-user", **values)


def test_a_missing_template_value_is_an_error():
    with pytest.raises(LLMError, match="needs a value"):
        prompt_render("extraction-user", date="2026-01-01")


def test_llm_json_refuses_an_answer_cut_at_max_tokens(fake_llm):
    """A reply stopped at max_tokens (finish_reason "length") was parsed like any other: JSON found in
    the part that came back was used, though the rest of the answer was missing."""
    fake_llm.reply_raw(json.dumps(completion('{"should_update": true, "memory_content": "# M"}', "length")))
    with pytest.raises(LLMAnswerCut, match=r"cut at max_tokens \(300\)"):
        llm_json([{"role": "user", "content": "hi"}], max_tokens=300)


def test_a_prompt_over_the_input_budget_is_not_sent(fake_llm, settings):
    """Nothing bounded a prompt: a week of daily notes or a long transcript went to the model whole,
    past any model's context, and the call failed (or the model silently lost the prompt's start)."""
    settings.LLM_MAX_INPUT_TOKENS = 1000
    fake_llm.reply("ok")
    within = [{"role": "system", "content": "s" * 2000}, {"role": "user", "content": "u" * 2000}]
    assert llm_chat(within) == "ok"
    over = [{"role": "system", "content": "s" * 2000}, {"role": "user", "content": "u" * 2001}]
    with pytest.raises(LLMPromptTooLong, match=r"about 1001 tokens, more than LLM_MAX_INPUT_TOKENS \(1000\)"):
        llm_json(over)
    assert len(fake_llm.requests) == 1
    assert prompt_room(within) == 0 and prompt_room(over) == -1
    assert newest_within(["aaaa", "bbbb", "cccc"], 10) == 2  # "bbbb\n\ncccc"
    assert newest_within(["aaaa", "bbbb", "cccc"], 9) == 1


def test_llm_chat_refuses_an_answer_cut_at_max_tokens(fake_llm):
    """llm_chat returned a reply stopped at max_tokens like a whole one: a compaction summary cut
    mid-sentence replaced the messages it summarised."""
    fake_llm.reply_raw(json.dumps(completion("The user is migrating the ledger to Postg", "length")))
    with pytest.raises(LLMAnswerCut, match=r"cut at max_tokens \(40\)"):
        llm_chat([{"role": "user", "content": "hi"}], max_tokens=40)


def test_the_api_key_is_never_in_an_llm_error(fake_llm):
    # A proxy that echoes the request (some debugging ones do) puts the key in its error body, which
    # would reach the logs and the llm_error a curator reads.
    fake_llm.reply_raw('{"error": "invalid key Bearer sk-test"}', status=401)
    with pytest.raises(LLMError) as failure:
        llm_chat([{"role": "user", "content": "hi"}])
    assert "sk-test" not in str(failure.value) and "HTTP 401" in str(failure.value)


def test_a_429_is_retried_after_the_wait_it_asks_for(fake_llm, settings):
    settings.LLM_RETRY_BACKOFF_SECONDS = 0.01
    fake_llm.reply_raw('{"error": "rate limited"}', status=429, headers={"Retry-After": "2"}).reply("ok")
    started = time.monotonic()
    assert llm_chat([{"role": "user", "content": "hi"}]) == "ok"
    assert 2 <= time.monotonic() - started < 4


def test_an_answer_that_trickles_in_is_given_up_at_the_timeout(settings):
    body = json.dumps(completion("a" * 200)).encode()
    server = TricklingServer(body, interval=0.05)  # the whole answer would take over 15 s
    try:
        settings.LLM_BASE_URL, settings.LLM_MODEL = server.base_url, "m"
        settings.LLM_TIMEOUT_SECONDS, settings.LLM_MAX_RETRIES = 1, 0
        started = time.monotonic()
        with pytest.raises(LLMError, match="no answer within 1"):
            llm_chat([{"role": "user", "content": "hi"}])
        assert time.monotonic() - started < 2.5
    finally:
        server.close()


def test_a_tls_error_mid_answer_is_an_llm_error(fake_llm, monkeypatch):
    """ssl.SSLError (a proxy cutting a TLS stream) is an OSError but not a ConnectionError: it escaped
    the client, and the extraction task failed instead of falling back to its heuristics."""

    def broken(*args, **kwargs):
        raise ssl.SSLError("decryption failed or bad record mac")

    monkeypatch.setattr(urllib.request, "urlopen", broken)
    with pytest.raises(LLMError, match="after 3 attempt"):
        llm_chat([{"role": "user", "content": "hi"}])


def test_an_endless_answer_is_given_up_before_it_fills_the_memory(fake_llm, monkeypatch):
    """A broken server (or the wrong URL: a file server, a stream) that sends more than any answer
    could be was read whole into memory until the timeout: at loopback speed, gigabytes."""
    monkeypatch.setattr(outbound, "MAX_ANSWER_BYTES", 1024 * 1024, raising=False)
    fake_llm.reply_raw("x" * (5 * 1024 * 1024))
    with pytest.raises(LLMError, match="more than 1048576 bytes"):
        llm_chat([{"role": "user", "content": "hi"}])
    assert len(fake_llm.requests) == 1  # not asked again: it would answer the same


class _CutBody(io.BytesIO):
    def read(self, *args):
        raise ConnectionResetError("connection reset by peer")


def test_an_error_whose_body_is_cut_is_an_llm_error(fake_llm, monkeypatch):
    """A 502 whose body the proxy cut: reading the body to report it raised, and the ConnectionResetError
    escaped the client (the caller's fallback never ran)."""

    def cut(*args, **kwargs):
        raise urllib.error.HTTPError("http://x/v1", 502, "Bad Gateway", {}, _CutBody())

    monkeypatch.setattr(urllib.request, "urlopen", cut)
    with pytest.raises(LLMError, match="HTTP 502"):
        llm_chat([{"role": "user", "content": "hi"}])

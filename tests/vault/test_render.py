import re
import time

import pytest

from memoryproject.errors import InvalidInput
from vault.render import bar_chart, diff_html, highlight, markdown_with_tasks, snippet_markdown
from vault.text import task_line_set, task_lines


def test_it_finds_task_lines_outside_code_fences():
    content = "- [ ] a\n* [x] b\n1. [X] c\n```\n- [ ] in code\n```\n  - [ ] nested\n- not a task"
    assert task_lines(content) == [(0, False), (1, True), (2, True), (6, False)]


def test_it_sets_a_task_line_and_refuses_other_lines():
    assert task_line_set("- [ ] a\n- [x] b", 0, True) == "- [x] a\n- [x] b"
    assert task_line_set("- [ ] a\n- [x] b", 1, False) == "- [ ] a\n- [ ] b"
    with pytest.raises(InvalidInput):
        task_line_set("text\n- [ ] a", 0, True)


def test_a_task_is_ticked_only_while_its_line_holds_the_task_the_page_named():
    content = "- [ ] ship it\r\n- [x] write  notes\r"
    assert task_line_set(content, 0, True, "ship it\r\n") == "- [x] ship it\r\n- [x] write  notes\r"
    assert task_line_set(content, 1, False, "write notes") == "- [ ] ship it\r\n- [ ] write  notes\r"
    with pytest.raises(InvalidInput, match="another task"):
        task_line_set(content, 0, True, "write notes")
    assert 'name="task" value="ship it"' in markdown_with_tasks(content, toggle_url="/t/", csrf_token="c")


def test_it_makes_task_boxes_tickable_only_when_they_match_the_source():
    html = markdown_with_tasks("- [ ] a\n- [x] b", toggle_url="/t/", csrf_token="c")
    assert html.count("<form") == 2 and 'name="line" value="1"' in html
    read_only = markdown_with_tasks("- [ ] a", toggle_url=None, csrf_token=None)
    assert "<form" not in read_only and "☐" in read_only


def test_it_strips_every_kind_of_html_from_markdown():
    html = markdown_with_tasks(
        '<script>x()</script><iframe src=y></iframe><a href="javascript:z()" onclick="w()">l</a>\n\n'
        "[m](javascript:alert(1)) ![i](http://e/i.png)",
        toggle_url=None,
        csrf_token=None,
    )
    for bad in ("<script", "<iframe", '<a href="javascript', "<img"):
        assert bad not in html
    assert not re.search(r"<[^>]*onclick", html)  # as escaped text it is harmless


def test_a_search_snippet_renders_markdown_and_marks_the_words():
    html = snippet_markdown("**Never** run migrations at night\n\n- [ ] check the lock\n- [x] done", "lock")
    assert "<strong>Never</strong>" in html and "**" not in html
    assert "☐" in html and "☑" in html and "[ ]" not in html and "<form" not in html
    assert "the <mark>lock</mark>" in html


def test_a_search_snippet_starts_at_the_matching_line_and_cuts_at_a_space():
    text = "# Notes\n\n" + "filler words here " * 40 + "\n- [ ] the **deploy** waits for the batch"
    html = snippet_markdown(text + "\n\nand then " + "more words " * 40, "deploy", length=80)
    assert html.startswith("<ul>") and "<strong><mark>deploy</mark></strong>" in html
    assert "filler" not in html and re.search(r"<p>and then (more words )*(more )?…</p>", html)


def test_a_search_snippet_marks_text_only_and_stays_sanitised():
    html = snippet_markdown("[amp link](http://amp.example/) AT&T <script>amp()</script>", "amp")
    assert 'href="http://amp.example/"' in html and "<mark>amp</mark> link" in html
    assert "&amp;T" in html and "<script" not in html and "&lt;script&gt;<mark>amp</mark>()" in html


def test_a_search_snippet_keeps_a_match_deep_in_text_without_spaces():
    """A long address or a paragraph of Chinese has no space to start the excerpt at: it starts near
    the match, which the excerpt used to leave out (it began at the text's start)."""
    url = "see https://example.com/" + "x" * 500 + "/deploy-key and more"
    assert "<mark>deploy</mark>" in snippet_markdown(url, "deploy") + highlight(url, "deploy")
    chinese = "前面的说明" * 120 + "部署密钥在保险库里" + "后面" * 200
    assert "<mark>部署密钥</mark>" in snippet_markdown(chinese, "部署密钥")
    assert "<mark>部署密钥</mark>" in highlight(chinese, "部署密钥")


def test_a_mark_neither_stops_at_nor_runs_into_cjk_characters():
    text = "我们决定使用Redis作为会话缓存，因为它很快。 redis-cli works"
    for render in (snippet_markdown, highlight):
        assert re.findall("<mark>(.*?)</mark>", render(text, "Redis")) == ["Redis", "redis"]
        assert re.findall("<mark>(.*?)</mark>", render(text, "会话缓存")) == ["会话缓存"]
        assert re.findall("<mark>(.*?)</mark>", render(text, "会话缓存是什么")) == ["会话缓存"]
        assert re.findall("<mark>(.*?)</mark>", render(text, "catalog log")) == []


@pytest.mark.parametrize("cluster", ["👍🏽", "👩\u200d💻", "🇯🇵", "é"])  # the last: e and a combining accent
def test_an_excerpt_never_cuts_what_reads_as_one_character(cluster):
    text = cluster * 300 + " deploy " + cluster * 300
    for html in (snippet_markdown(text, "deploy", length=101), highlight(text, "deploy", length=101)):
        body = re.sub(r"</?(p|mark)>|…| ", "", str(html)).replace("deploy", "")
        assert body and body == cluster * (len(body) // len(cluster)), body[:12]


def test_the_diff_escapes_content():
    html = diff_html("<script>a</script>", "<b>b</b>", before_label="<v1>", after_label="now")
    assert "<script>" not in html and "<b>" not in html and "&lt;v1&gt;" in html


def test_the_chart_scales_bars_to_the_busiest_day():
    chart = bar_chart([("d1", 0), ("d2", 5), ("d3", 10)], width=300, height=104)
    assert [bar.height for bar in chart.bars] == [0.0, 50.0, 100.0]
    assert chart.total == 15 and chart.top == 10
    assert bar_chart([("d1", 0)]).bars[0].height == 0.0


@pytest.mark.parametrize(
    "text",
    [
        "[" * 20_000,  # about a minute before
        ("[" + "a" * 31) * 2_000,
        "[a](" * 8_000 + ")",
        "[a][" * 8_000,
        "![" * 10_000,
        "[^" * 10_000,
        "[" * 3_000 + "x" + "]" * 3_000,
    ],
    ids=["open", "open-words", "open-targets", "reference-opens", "images", "footnotes", "nested"],
)
def test_brackets_left_open_render_in_bounded_time_as_plain_text(text):
    """Anyone with a write token stored them; Python-Markdown's link patterns read the rest of the text
    from each open bracket, and every curator page showing the entry hung for seconds to minutes."""
    from vault.render import markdown_html

    started = time.perf_counter()
    html = markdown_html(text + " <b>tail</b>")
    assert time.perf_counter() - started < 1
    assert "&lt;b&gt;tail&lt;/b&gt;" in html and "<b>" not in html
    assert "[" in html


def test_links_people_write_still_render_as_links():
    from vault.render import markdown_html

    links = "\n".join(f"- [link {i}](https://example.com/{i}) and [ref {i}][r{i}]" for i in range(300))
    refs = "\n".join(f"[r{i}]: https://example.com/r{i}" for i in range(300))
    html = markdown_html(f"{links}\n\n{refs}\n\nA stray [ bracket, and [another.")
    assert html.count("<a ") == 600


def test_a_thai_word_with_its_vowel_and_tone_marks_is_marked_whole():
    """The highlight split the query's words at `\\w`, which Thai vowel and tone marks are not: เซสชัน
    (session) was asked as เซสช and น, so every น of the text was marked and the word itself was not."""
    text = "เราตัดสินใจใช้Redisเป็นแคชของเซสชัน แล้วก็ไปนอน"  # ... and then went to sleep (นอน)
    for render in (snippet_markdown, highlight):
        assert re.findall("<mark>(.*?)</mark>", render(text, "เซสชัน")) == ["เซสชัน"]

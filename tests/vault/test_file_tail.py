"""Which parts an append to a file leaves out: the index used for many `unless` texts answers exactly as
looking for each text in the whole file does."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault.services.files import _INDEX_KEY_CHARS, _INDEX_MIN_TEXTS, _tail_build


def _tail_by_search(stored: str, parts: list[tuple[str, str]]) -> str:
    """The rule, written plainly: each `unless` looked for in the whole file, and across the seam."""
    tail = ""
    for text, unless in parts:
        if unless and (unless in stored or unless in stored[-len(unless) :] + tail):
            continue
        tail += text
    return tail


# Few letters and the exchange anchor's characters, so that texts share anchors and long prefixes; or one or
# two letters only, so that anchors overlap ("aaaaa" holds "aaaa" twice).
_CHARS = st.sampled_from(["]", "\n", "*", "a", "b", " "])
_ALPHABETS = st.sampled_from([_CHARS, st.sampled_from(["a", "b"]), st.just("a")])


@st.composite
def _file_and_parts(draw):
    stored = draw(st.text(draw(_ALPHABETS), min_size=0, max_size=400))
    count = draw(st.integers(min_value=_INDEX_MIN_TEXTS, max_value=20))
    parts = []
    for _ in range(count):
        if stored and draw(st.booleans()):
            start = draw(st.integers(0, len(stored) - 1))
            length = draw(st.integers(1, _INDEX_KEY_CHARS * 2))
            unless = stored[start : start + length]  # in the file (or cut short by its end)
            if draw(st.booleans()):
                unless += draw(st.text(_CHARS, min_size=1, max_size=3))  # one that runs past it
        else:
            unless = draw(st.text(_CHARS, min_size=0, max_size=_INDEX_KEY_CHARS * 2))
        parts.append((draw(st.text(_CHARS, min_size=1, max_size=60)), unless))
    return stored, parts


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_file_and_parts())
def test_the_index_leaves_out_exactly_the_parts_a_search_of_the_file_would(case):
    stored, parts = case
    assert _tail_build(stored, parts) == _tail_by_search(stored, parts)


def test_exchanges_logged_in_a_large_note_are_left_out_and_new_ones_kept():
    def block(i: int) -> tuple[str, str]:
        body = f"**User:** question {i} about the ledger\n**Agent:** answer {i} about the ledger"
        return f"\n## [10:00:{i % 60:02d}]\n{body}\n", f"]\n{body}\n"

    stored = "# Daily Notes -- 2026-11-25\n" + "".join(text for text, _ in map(block, range(3000)))
    parts = [block(i) for i in (5, 2999, 3000, 3001, 17, 3001)]
    parts += [block(i) for i in range(3002, 3002 + _INDEX_MIN_TEXTS)]
    tail = _tail_build(stored, parts)
    assert tail == "".join(text for text, _ in [block(3000), block(3001)] + parts[6:])
    assert tail == _tail_by_search(stored, parts)


def test_a_text_that_starts_inside_another_occurrence_of_its_anchor_is_found():
    # "]]]]]\n" holds the anchor "]]]]" at two overlapping places; the text starts at the second.
    stored = "note ]]]]]\n" + "".join(f"line {i} of the note\n" for i in range(10))
    inside = stored[stored.index("]]]]") + 1 :][: _INDEX_KEY_CHARS + 10]
    parts = [
        (f"new {i}\n", f"]]]]\nnot in the note {i} " + "x" * _INDEX_KEY_CHARS)
        for i in range(_INDEX_MIN_TEXTS)
    ]
    parts.append(("left out\n", inside))
    assert _tail_build(stored, parts) == "".join(f"new {i}\n" for i in range(_INDEX_MIN_TEXTS))

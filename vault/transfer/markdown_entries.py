"""The parts of a `.memory/` vault's markdown file: `## Title` sections (a file written by hand) and the
entry blocks after `<!-- id:... -->` markers (`## date · #tags` header, content, `---`)."""

import re
from datetime import datetime

from vault.extraction import SECTION_MAP, _title_normalise
from vault.transfer.common import HEADER_TAG_RE, SECTION_RE, date_parse
from vault.transfer.export import content_unescape


def _sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Split markdown on `## Title` lines: (preamble, [(title, body)])."""
    matches = list(SECTION_RE.finditer(text))
    preamble = text[: matches[0].start()] if matches else text
    sections = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections.append((match.group("title").strip(), text[match.end() : end].strip()))
    return preamble, sections


def _preamble_text(preamble: str) -> str:
    """A file's text before its first entry, minus the `# Title` line an export or a person puts there."""
    return "\n".join(line for line in preamble.strip().splitlines() if not re.match(r"^#\s", line)).strip()


def _section_content(title: str, body: str) -> str:
    if _title_normalise(title) in {_title_normalise(name) for name in SECTION_MAP}:
        return body
    return f"**{title}**\n\n{body}" if body else f"**{title}**"


# An entry as the export writes it: the marker's line end, the header line, the content exactly, `---`.
EXACT_BLOCK_RE = re.compile(r"\n(?P<header>##[ \t][^\n]*)\n(?P<content>.*)\n---\n*", re.DOTALL)


def _header_parse(header: str) -> tuple[datetime | None, list[str]]:
    date_part, _, tag_part = header.partition("·")
    return date_parse(date_part.strip()), HEADER_TAG_RE.findall(tag_part)


def _entry_block_parse(block: str, marker_id: str) -> tuple[datetime | None, list[str], str, bool]:
    """(date, tags, content, header_ok) of the text after a marker."""
    block = block.strip("\n").rstrip()
    if block.endswith("\n---") or block == "---":
        block = block[:-3]
    first, _, rest = block.partition("\n")
    header = re.match(r"^##[ \t]+(.*)$", first)
    if not header:
        return None, [], block.strip(), False
    return *_header_parse(header.group(1)), rest.strip(), True


def _exact_block_parse(block: str) -> tuple[datetime | None, list[str], str] | None:
    """(date, tags, content) of an entry in the form the export writes (format 2): the content exactly
    as it was, unescaped. None when the block is not in that form (edited by hand)."""
    match = EXACT_BLOCK_RE.fullmatch(block)
    if not match:
        return None
    return *_header_parse(match.group("header")[2:]), content_unescape(match.group("content"))

"""Read the README's shell blocks and what they say they print.

Every ```sh / ```bash block is preceded by a marker line:
  <!-- readme-test: run -->            run it, in order with the other runnable blocks, in one bash
  <!-- readme-test: skip REASON -->    not run (e.g. it starts the server or asks for a password)
Inside a runnable block, a comment line starting with `# ->` (or a comment that is a JSON value,
`# {...}`) states what the commands since the previous such line print: its text, where `...` stands
for anything, must appear in their output (whitespace-insensitive).
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

MARKER = re.compile(r"^<!--\s*readme-test:\s*(run|skip)\b(.*?)-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
EXPECT = re.compile(r"^\s*#\s*(?:->\s*(?P<arrow>.+)|(?P<json>[{\[].*))$")


@dataclass
class Segment:
    code: str
    expected: str | None  # what the code prints, or None: it only has to succeed


@dataclass
class Block:
    line: int
    language: str
    mode: str | None  # "run", "skip" or None (no marker)
    segments: list[Segment] = field(default_factory=list)


def blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence or not fence.group(1):
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        previous = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        marker = MARKER.match(previous.strip())
        block = Block(line=start + 1, language=fence.group(1), mode=marker.group(1) if marker else None)
        code: list[str] = []
        for text in lines[start + 1 : j]:
            expect = EXPECT.match(text)
            if expect:
                block.segments.append(
                    Segment("\n".join(code), (expect.group("arrow") or expect.group("json")).strip())
                )
                code = []
            else:
                code.append(text)
        if any(line.strip() for line in code):
            block.segments.append(Segment("\n".join(code), None))
        found.append(block)
        i = j + 1
    return found


def shown(expected: str, output: str) -> bool:
    """Whether output shows expected: its pieces between `...`, in order, whitespace-insensitive."""
    squash = lambda text: re.sub(r"\s+", "", text)  # noqa: E731
    haystack = squash(output)
    position = 0
    for piece in (squash(part) for part in expected.split("...")):
        if not piece:
            continue
        found = haystack.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    return True

"""Skip a regex that cannot match: the strings a pattern needs, read from its parse tree.

Python's `re` tries a pattern at every position of the text, so running a few dozen patterns over each
chat turn (redaction, the write-ahead scan) costs microseconds per pattern even when, as almost always,
none matches. Most of those patterns cannot match without one of a few literal words ("password",
"remember", a month's name). `required_strings` finds such a set by walking the pattern's parse tree,
and a plain `in` test on the lower-cased text (`haystack`) then rules the pattern out at a fraction of the
cost. The set is always necessary, never sufficient: when a string of it is present the pattern still
runs and decides.

How the set is found: a sequence needs each of its parts, so any one part's set will do (the longest
strings are kept, they are the rarest); adjacent literal characters join into one string; an alternation
needs one of its branches, so it needs the union of their sets, and nothing when one branch needs
nothing; a repeat needs its body when it must run at least once. Character classes, wildcards and
look-arounds need nothing. Anything the walk does not know gives None: run the pattern.
"""

from __future__ import annotations

import re

try:  # the parser behind re.compile, public in spirit but private in name (re._parser since 3.11)
    from re import _constants as _c
    from re import _parser
except ImportError:  # pragma: no cover - another Python: no prefilter, every pattern runs
    _parser = _c = None

# Under IGNORECASE, `re` matches these four letters for ASCII ones ('ſ' for 's', 'ı' and 'İ' for 'i',
# the Kelvin sign for 'k') while str.lower() leaves them alone: mapped first, so that the haystack holds
# every string a match needs.
_CASE_EXTRAS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_LOOK_ALIKES = tuple(chr(code) for code in _CASE_EXTRAS)


def haystack(text: str) -> str:
    """The text as required_strings' sets are compared with: lower case, case-insensitive look-alikes
    mapped to their ASCII letters."""
    # isascii() is a constant-time test; four `in` scans cost far less than translate(), which looks
    # every character of the text up in the table (about 60 us for a 700-character accented turn).
    if text.isascii() or not any(char in text for char in _LOOK_ALIKES):
        return text.lower()
    return text.translate(_CASE_EXTRAS).lower()


def required_strings(pattern: re.Pattern | str, flags: int = 0) -> tuple[str, ...] | None:
    """Lower-case strings of which every match of `pattern` contains at least one, or None when no such
    set was found (the pattern must always run)."""
    if _parser is None:  # pragma: no cover
        return None
    if isinstance(pattern, re.Pattern):
        pattern, flags = pattern.pattern, pattern.flags
    try:
        tree = _parser.parse(pattern, flags)
        found = _sequence(list(tree))
    except Exception:  # pragma: no cover - an unknown node or parser change: no prefilter
        return None
    if not found:
        return None
    return tuple(sorted(found))


def _better(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    """Of two sets a text must meet, the one that rules out more: longer strings first, then fewer."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b, key=lambda s: (min(len(x) for x in s), -len(s)))


# A class of a few literal characters ("[-_]", "[ãa]") or an alternation of literal words ("sk|pk")
# continues a literal run as that many alternatives ("sk-", "sk_", "pk-", ...), up to this many in all:
# a handful of longer strings rules out more than one short one.
_CLASS_CHARS_MAX = 6
_ALTERNATIVES_MAX = 16


def _literal_choices(op, arg) -> list[str] | None:
    """The strings a class of literal characters or an alternation of literal branches matches, or None."""
    if op is _c.IN:
        if not arg or len(arg) > _CLASS_CHARS_MAX or any(kind is not _c.LITERAL for kind, _ in arg):
            return None
        return [chr(code) for _, code in arg]
    if op is _c.SUBPATTERN:
        body = list(arg[-1])
        if len(body) == 1:
            return _literal_choices(*body[0])
        return None
    if op is _c.BRANCH:
        choices = []
        for branch in arg[1]:
            if not branch or any(kind is not _c.LITERAL for kind, _ in branch):
                return None
            choices.append("".join(chr(code) for _, code in branch))
        return choices
    return None


def _sequence(items: list) -> frozenset[str] | None:
    best: frozenset[str] | None = None
    runs: list[str] = [""]  # the literal text just before this point, one string per alternative

    def close_run():
        nonlocal best, runs
        if runs[0]:
            best = _better(best, frozenset(run.lower() for run in runs))
        runs = [""]

    for op, arg in items:
        if op is _c.LITERAL:
            runs = [run + chr(arg) for run in runs]
            continue
        choices = _literal_choices(op, arg)
        if choices is not None and len(runs) * len(choices) <= _ALTERNATIVES_MAX:
            runs = [run + choice for run in runs for choice in choices]
            continue
        if op is _c.BRANCH and len(runs) == 1 and runs[0]:
            # The parser takes a common prefix out of the branches ("p(?:assword|wd)"): put it back in
            # front of each, so that the branches' strings are whole words again.
            prefix = [(_c.LITERAL, ord(char)) for char in runs[0]]
            best = _better(best, _node(op, (arg[0], [prefix + list(branch) for branch in arg[1]])))
        close_run()
        best = _better(best, _node(op, arg))
    close_run()
    return best


def _node(op, arg) -> frozenset[str] | None:
    if op is _c.SUBPATTERN:
        return _sequence(list(arg[-1]))
    if op is _c.ATOMIC_GROUP:
        return _sequence(list(arg))
    if op is _c.BRANCH:
        union: set[str] = set()
        for branch in arg[1]:
            needed = _sequence(list(branch))
            if needed is None:
                return None
            union |= needed
        return frozenset(union)
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        low, _high, body = arg
        return _sequence(list(body)) if low >= 1 else None
    # Classes, wildcards, anchors, look-arounds, back-references: nothing known to be needed.
    return None


def requires_digit(pattern: re.Pattern | str, flags: int = 0) -> bool:
    """Whether every match of `pattern` contains a character `\\d` matches (a `\\d`, a class of digits or
    a digit literal that must be matched): such a pattern need not run on a text without one. False
    when that is not known."""
    if _parser is None:  # pragma: no cover
        return False
    if isinstance(pattern, re.Pattern):
        pattern, flags = pattern.pattern, pattern.flags
    if flags & re.ASCII:  # \d would then be [0-9] only, and a digit test must agree with the pattern
        return False
    try:
        return _sequence_digit(list(_parser.parse(pattern, flags)))
    except Exception:  # pragma: no cover - an unknown node or parser change: run the pattern
        return False


def _sequence_digit(items: list) -> bool:
    return any(_node_digit(op, arg) for op, arg in items)


def _node_digit(op, arg) -> bool:
    if op is _c.LITERAL:
        return bool(re.match(r"\d", chr(arg)))
    if op is _c.IN:
        return _class_digits_only(arg)
    if op is _c.SUBPATTERN:
        return _sequence_digit(list(arg[-1]))
    if op is _c.ATOMIC_GROUP:
        return _sequence_digit(list(arg))
    if op is _c.BRANCH:
        return all(_sequence_digit(list(branch)) for branch in arg[1])
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        low, _high, body = arg
        return low >= 1 and _sequence_digit(list(body))
    # Wildcards, anchors, look-arounds (they consume nothing), back-references: not known.
    return False


def _class_digits_only(items) -> bool:
    """A character class every member of which is a digit: `\\d`, `[0-9]`, `[\\d.]` is not."""
    if not items:
        return False
    for op, arg in items:
        if op is _c.CATEGORY and arg is _c.CATEGORY_DIGIT:
            continue
        if op is _c.LITERAL and re.match(r"\d", chr(arg)):
            continue
        if op is _c.RANGE and all(re.match(r"\d", chr(code)) for code in range(arg[0], arg[1] + 1)):
            continue
        return False  # NEGATE, other categories, letters
    return True

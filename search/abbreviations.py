"""Abbreviations agents and people type for words their memories write out, and back: "k8s" and
"kubernetes", "py3.11" and "Python 3.11", "repo" and "repository", "PR" and "pull request".

A query word also matches the other forms of it here (search/query.py adds them as it adds a
number's other ways of being written), as if the query had said either. The other way round, a word
written out also matches its abbreviation, except an abbreviation that is also a file extension
("py", "js", "ts"): every path of that language holds it, so "python" would match every file name.
A phrase of several words ("pull request") is not abbreviated back.

Only abbreviations with one common meaning in software work are here ("tf" is Terraform and
TensorFlow, "ms" milliseconds and Microsoft: neither is), in English, and Portuguese where the usual
abbreviation differs ("bd", banco de dados).
"""

# abbreviation -> what it stands for (a word, or a phrase of words)
ABBREVIATIONS: dict[str, tuple[str, ...]] = {
    "py": ("python",),
    "js": ("javascript",),
    "ts": ("typescript",),
    "k8s": ("kubernetes",),
    "pg": ("postgres", "postgresql"),
    "db": ("database",),
    "dbs": ("databases",),
    "bd": ("banco de dados",),
    "repo": ("repository",),
    "repos": ("repositories",),
    "env": ("environment",),
    "envs": ("environments",),
    "config": ("configuration",),
    "cfg": ("configuration",),
    "auth": ("authentication",),
    "dep": ("dependency",),
    "deps": ("dependencies",),
    "dev": ("development",),
    "prod": ("production",),
    "msg": ("message",),
    "msgs": ("messages",),
    "err": ("error",),
    "impl": ("implementation",),
    "doc": ("documentation",),
    "docs": ("documentation",),
    "fn": ("function",),
    "func": ("function",),
    "dir": ("directory",),
    "dirs": ("directories",),
    "pkg": ("package",),
    "pkgs": ("packages",),
    "lib": ("library",),
    "libs": ("libraries",),
    "perf": ("performance",),
    "req": ("request",),
    "resp": ("response",),
    "arg": ("argument",),
    "args": ("arguments",),
    "param": ("parameter",),
    "params": ("parameters",),
    "async": ("asynchronous",),
    "gh": ("github",),
    "infra": ("infrastructure",),
    "txn": ("transaction",),
    "ctx": ("context",),
    "cmd": ("command",),
    "spec": ("specification",),
    "tmp": ("temporary",),
    "mgmt": ("management",),
    "i18n": ("internationalization",),
    "l10n": ("localization",),
    "a11y": ("accessibility",),
    "pr": ("pull request",),
    "prs": ("pull requests",),
    "mr": ("merge request",),
    "ci": ("continuous integration",),
    "ml": ("machine learning",),
    "llm": ("large language model",),
    "llms": ("large language models",),
    "ui": ("user interface",),
}

# Abbreviations that are also file extensions: a path of that language holds them as a word.
FILE_EXTENSIONS = frozenset({"py", "js", "ts"})


def _written_out() -> dict[str, tuple[str, ...]]:
    back: dict[str, list[str]] = {}
    for short, longs in ABBREVIATIONS.items():
        if short in FILE_EXTENSIONS:
            continue
        for long in longs:
            if " " not in long:
                back.setdefault(long, []).append(short)
    return {long: tuple(shorts) for long, shorts in back.items()}


WRITTEN_OUT = _written_out()


def other_forms(word: str) -> tuple[str, ...]:
    """The other forms of a query word: what it abbreviates, or the abbreviations of it; () for
    any other word."""
    word = word.lower()
    return ABBREVIATIONS.get(word, ()) + WRITTEN_OUT.get(word, ())


def cut_variants(cut: str) -> list[str]:
    """A query word's cut ("py 3.11", from "py3.11") with an abbreviation among its words written out
    ("python 3.11"), one variant per form; [] when no word of it is an abbreviation."""
    words = cut.split(" ")
    variants = []
    for i, word in enumerate(words):
        for long in ABBREVIATIONS.get(word.lower(), ()):
            variants.append(" ".join([*words[:i], long, *words[i + 1 :]]))
    return variants

"""Characters a reader sees as one but Unicode spells with several code points: a text cut between them
shows a broken character. `parts_left` finds what a cut left of one."""

import unicodedata

TECHNOLOGIST = "\U0001f469\u200d\U0001f4bb"  # 👩‍💻: woman, ZWJ, laptop
FLAG = "\U0001f1ef\U0001f1f5"  # 🇯🇵: two regional indicators
THUMB = "\U0001f44d\U0001f3fd"  # 👍🏽: thumbs up and a skin tone
ACCENTED = "e\u0301"  # é as e and a combining acute
ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"  # a black flag and tags
CLUSTERS = (TECHNOLOGIST, FLAG, THUMB, ACCENTED, ENGLAND)
# 11 + 8 + 8 + 3 + 28 + 1 bytes (59, prime): a cut stepping 4 bytes lands on every byte of it in turn.
RUN = "".join(CLUSTERS) + "a"
# What an entry may hold: a joiner or tags in an entry hold it for review (invisible characters).
ENTRY_RUN = FLAG + THUMB + ACCENTED + "a"  # 8 + 8 + 3 + 1 characters


def parts_left(text: str) -> list[str]:
    """The parts of the clusters left in `text` once every whole cluster is taken out: a cut one."""
    for cluster in CLUSTERS:
        text = text.replace(cluster, "")
    parts = {"\u200d", "\U0001f469", "\U0001f4bb", "\U0001f44d", "\u0301", "\U0001f3f4", *ENGLAND}
    return [c for c in text if c in parts or "\U0001f1e6" <= c <= "\U0001f3ff" or unicodedata.combining(c)]

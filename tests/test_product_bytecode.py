"""The suite writes the product's bytecode before its processes start (tests/conftest.py)."""

import importlib.util
import os
import struct

from tests.conftest import PRODUCT_PACKAGES, ROOT


def _fresh(source) -> bool:
    """The cached bytecode exists and was made from this source (its header's mtime and size)."""
    cached = importlib.util.cache_from_source(str(source))
    try:
        with open(cached, "rb") as handle:
            header = handle.read(16)
    except FileNotFoundError:
        return False
    flags, mtime, size = struct.unpack("<4xIII", header)
    stat = os.stat(source)
    return flags == 0 and mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF


def test_every_product_module_has_fresh_bytecode_for_the_processes_the_suite_starts():
    sources = [path for package in PRODUCT_PACKAGES for path in (ROOT / package).rglob("*.py")]
    assert len(sources) > 100
    stale = [str(path.relative_to(ROOT)) for path in sources if not _fresh(path)]
    assert stale == []

"""Fixtures of the session tests."""

from tests.fake_llm import fake_llm  # noqa: F401

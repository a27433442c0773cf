"""Token counts of stored texts are kept, bounded, and always equal tiktoken's."""

from __future__ import annotations

from llmsim import tokens


def test_cached_counts_equal_tiktoken_and_are_kept() -> None:
    cache = tokens.CountCache(max_chars=1000)
    text = "The lighthouse keeper climbed the stairs. " * 3
    assert cache.count(text, "o200k_base") == tokens.count(text, "o200k_base")
    assert cache.count(text, "cl100k_base") == tokens.count(text, "cl100k_base")  # per encoding
    assert cache.count(text, "o200k_base") == tokens.count(text, "o200k_base")
    assert len(cache._counts) == 2 and cache.chars == 2 * len(text)


def test_the_cache_is_bounded_by_characters_oldest_out_first() -> None:
    cache = tokens.CountCache(max_chars=200)
    for i in range(10):
        cache.count(f"text number {i} " * 2, "o200k_base")
    assert 150 <= cache.chars <= 200 and ("o200k_base", "text number 9 " * 2) in cache._counts
    assert ("o200k_base", "text number 0 " * 2) not in cache._counts
    cache.count("x" * 60, "o200k_base")  # more than a quarter of the bound: counted, not kept
    assert ("o200k_base", "x" * 60) not in cache._counts

"""Vocabulary as data: plain phrases compiled into one whole-word, case-insensitive pattern."""

from __future__ import annotations

import pytest

from services.text.vocabulary import combos, phrases


def test_a_phrase_matches_as_whole_words_only_and_in_any_case() -> None:
    vat = phrases(("vat", "value added tax"))
    assert vat.search("Is VAT charged?") and vat.search("value ADDED tax on fuel")
    assert not vat.search("a private vatican tour") and not vat.search("the values added")


def test_the_longest_phrase_starting_at_one_place_is_the_match() -> None:
    gains = phrases(("capital gain", "capital gains", "capital gains tax", "cgt"))
    found = gains.search("Is capital gains tax due?")
    assert found is not None and found.group(0) == "capital gains tax"
    assert [m.group(0) for m in gains.finditer("capital gains and capital gain")] == ["capital gains", "capital gain"]


def test_phrases_are_plain_text_not_patterns() -> None:
    first = phrases(("first \u00a3", "e.g"))
    assert first.search("the first \u00a3500") and first.search("costs, e.g. fares")
    assert not first.search("the first 500") and not first.search("eng")  # the dot is a dot, not any character


def test_opening_matches_only_what_a_text_opens_with_past_punctuation() -> None:
    note = phrases(("note", "notes"), opening=True)
    assert note.match("(Note: the limit") and note.search("- notes")
    assert not note.search("See note 2") and not note.search("Notebook")


def test_spaced_phrases_take_any_run_of_whitespace_and_plain_ones_one_space() -> None:
    assert phrases(("this tax year",), spaced=True).search("this  tax\nyear")
    assert not phrases(("this tax year",)).search("this  tax year")


def test_combos_spell_out_every_phrase_an_empty_word_leaving_its_slot_out() -> None:
    assert combos(("my",), ("", "own"), ("business",)) == ["my business", "my own business"]
    with pytest.raises(ValueError):
        phrases(())

"""Pieces of the offline provider that need no index: table lookup, the lay-word lexicon."""

from __future__ import annotations

from services.providers.local import _lookup_rows
from services.stages.lexicon import expand, expansions

CO2_TABLE = [
    "CO2 emissions (g/km) | 2013/14 | 2014/15",
    "130 | 18% | 19%",
    "135 | 19% | 20%",
    "140 | 20% | 21%",
    "145 | 21% | 22%",
    "121-124 | 15% | 16%",
]


def test_lookup_picks_the_band_a_number_falls_in_or_the_last_key_below_it() -> None:
    assert _lookup_rows(CO2_TABLE, [142.0]) == {3}  # 142 g/km is charged as 140
    assert _lookup_rows(CO2_TABLE, [122.0]) == {5}  # inside the 121-124 range
    assert _lookup_rows(CO2_TABLE, [100.0]) == set()  # below every band: no guess
    assert _lookup_rows(CO2_TABLE, []) == set()


def test_lexicon_adds_the_manuals_words_once() -> None:
    assert "mobile telephone" in expansions("Work gave me an iPhone - is it a perk?")
    assert "benefit in kind" in expansions("Work gave me an iPhone - is it a perk?")
    assert expansions("What is the official rate of interest?") == []
    assert expand("my boss and my boss").count("employer") == 1
    # whole words only: 'toolbar' is not 'tools', 'mobiles' is a mobile
    assert "tools" not in expansions("the toolbar")
    assert "mobile telephone" in expansions("two mobiles")

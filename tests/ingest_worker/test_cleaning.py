"""Text cleaned of the 2014 scrape's damage: markdown, lost spaces, printf, titles (ingest_worker/cleaning.py), each on the real page that shows it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest_worker.cleaning import clean_text, clean_title
from tests.conftest import EIM
from tests.ingest_worker.test_parser import blocks_of, page


def test_footnote_star_is_not_a_bullet() -> None:
    assert clean_text("rate 45p* applies")[0] == "rate 45p* applies"
    assert clean_text("Salary 100,000 * 180/235 = 76,595")[0] == "Salary 100,000 * 180/235 = 76,595"  # a product
    assert clean_text("first*   second")[0] == "first \u2022 second"
    assert clean_text("concerns such as: * trades")[0] == "concerns such as: \u2022 trades"


def test_titles_lose_their_entities() -> None:
    assert clean_title("Payment of training costs: Milsom &amp; Hinsley v HMRC (SpC569)") == "Payment of training costs: Milsom & Hinsley v HMRC (SpC569)"
    assert clean_title("Employee Car Ownership Schemes:    Employer&#x2019;s PAYE responsibilities") == "Employee Car Ownership Schemes: Employer\u2019s PAYE responsibilities"


def test_every_title_in_the_manual_is_free_of_entities(corpus_dir: Path) -> None:
    titles = [json.loads(f.read_text()).get("title", "") for f in sorted((corpus_dir / EIM).glob("eim*.json"))]
    raw = [t for t in titles if "&#x" in t or "&amp;" in t]
    assert len(raw) >= 60  # the scrape's titles do carry them
    assert not any("&#x" in clean_title(t) or "&amp;" in clean_title(t) for t in raw)


def test_markup_in_a_title_is_dropped_and_a_title_of_table_cells_names_nothing() -> None:
    assert clean_title("Redundancies</p>") == "Redundancies"  # EIM70400
    assert clean_title("</td> <td>  &#xA3;2,536") == ""  # EIM13505
    assert clean_title("&#xA3;22,500 x 15%  </td> <td>  &#xA3;3,375") == ""  # EIM24700
    assert clean_title("Cars: &lt;b&gt; list price") == "Cars: <b> list price"  # an escaped bracket is text, not markup


def test_the_scrapes_printf_percent_is_repaired_in_titles_and_text(corpus_dir: Path) -> None:
    # the 2014 scrape ran "%f" through a printf: EIM36640 is titled "Withdrawal of 100 0.000000irst
    # year allowance ...", EIM74607 says "The reduction is 7 0.000000rom the basic amount"
    assert clean_title(page(corpus_dir, "EIM36640")["title"]).startswith("Withdrawal of 100% first year allowance")
    text = " ".join(b.text for b in blocks_of(corpus_dir, "EIM74607"))
    assert "The reduction is 7% from the basic amount" in text and "0.000000" not in text
    assert clean_text("a cost of 10 0.50 and 2 0.000000 pounds")[0] == "a cost of 10 0.50 and 2 0.000000 pounds"  # only before the word it ate


@pytest.mark.parametrize(
    ("section", "reads", "eaten"),
    [
        ("EIM68450", "The 10% ceiling does not apply to pub employees", "10eiling"),  # "% c" printed nothing
        ("EIM16070", "a 100% subsidiary of the employer", "100ubsidiary"),  # "% s" printed nothing
        ("EIM11924", "(£100,000 plus 1.5% commission to the supplier)", "1.5ommission"),
        ("EIM15413", "where a 100% deduction is allowable", "100 0eduction"),  # "% d" printed " 0"
    ],
)
def test_words_the_scrapes_printf_ate_are_put_back(corpus_dir: Path, section: str, reads: str, eaten: str) -> None:
    text = " ".join(b.text for b in blocks_of(corpus_dir, section))
    assert reads in text and eaten not in text


def test_a_figure_glued_to_a_word_or_unit_is_not_taken_for_a_printf() -> None:
    # the letters after the figure are a word or unit already, or no letter makes them one
    assert clean_text("at 16.00hrs, 12hours and 5xyzq")[0] == "at 16.00hrs, 12hours and 5xyzq"


@pytest.mark.parametrize(
    ("section", "reads", "glued"),
    [
        ("EIM11366", "(see EIM20202 onwards)", "EIM20202onwards"),  # after a reference
        ("EIM30073", "(see also NIM06170)", "alsoNIM06170"),  # before another manual's reference
        ("EIM11308", "Section 102 ITEPA 2003", "Section102"),  # a statute word and its number
        ("EIM45085", "before 6 April 2011", "6April"),  # a day and its month
        ("EIM40009", "28 February 2008", "February2008"),  # a month and its year
        ("EIM33006", "183 consecutive days", "183consecutive"),  # a number and its unit of time
        # a reference glued to "and" ends its paragraph on "and", so the next goes on from it
        ("EIM21633", "(see EIM21630 and EIM21632).", "EIM21630and"),
    ],
)
def test_spaces_the_scrape_lost_are_put_back(corpus_dir: Path, section: str, reads: str, glued: str) -> None:
    texts = [b.text for b in blocks_of(corpus_dir, section)]
    assert any(reads in t for t in texts), reads
    assert not any(glued in t for t in texts)


def test_a_no_break_space_read_as_latin_1_is_a_space(corpus_dir: Path) -> None:
    # 21 EIM pages open with a site link "businessesÂ&nbsp;&amp; corporations"
    texts = [b.text for b in blocks_of(corpus_dir, "EIM10400")]
    assert "businesses & corporations" in texts and not any("\u00c2" in t for t in texts)

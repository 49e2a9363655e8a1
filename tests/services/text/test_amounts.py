"""Amounts: one pattern read as pounds (numbers) and as normalised amounts (text), and a limit near the asker's own."""

from __future__ import annotations

from services.text.amounts import amounts, kind, pounds, states_limit_near


def test_pounds_and_amounts_read_one_pattern_two_ways() -> None:
    text = "\u00a35,000, \u00a330k, \u00a32 million, 45p and 21 per cent (&#xA3;8)"
    assert pounds(text) == [5000.0, 30000.0, 2.0]
    assert amounts(text) == ["\u00a35000", "\u00a330k", "\u00a32million", "45p", "21%", "\u00a38"]
    assert [kind(a) for a in amounts("\u00a35, 45p, 21%")] == ["pounds", "pence", "percent"]
    assert amounts("EIM45p and 1.5p") == ["1.5p"]  # pence stand alone: not a word's tail, nor a decimal's "5p"


def test_a_sentence_setting_a_limit_of_the_order_of_the_askers_amount_is_what_it_is_measured_against() -> None:
    loan = [3600.0]  # "an interest-free season ticket loan of \u00a33,600"
    # the manual's own sentences (EIM26140, EIM13505, EIM26155)
    assert states_limit_near(loan, "No tax is chargeable if the total balance outstanding on all beneficial loans does not exceed \u00a35,000 throughout the year.")
    assert states_limit_near([38000.0], "counts as employment income only to the extent that it exceeds \u00a330,000.")
    assert states_limit_near([700.0], "the maximum amount advanced at any one time does not exceed \u00a31,000")
    # an amount far from the asker's, one stated without a limit, the asker's own figure, or no amount asked
    assert not states_limit_near(loan, "the maximum amount advanced at any one time does not exceed \u00a31,000")
    assert not states_limit_near(loan, "The employer lent \u00a35,000 to the employee in June.")
    assert not states_limit_near(loan, "A loan of \u00a33,600 that does not exceed the limit.")
    assert not states_limit_near([], "does not exceed \u00a35,000")

"""Reading a question as people write it (services/text/reading.py): the sentences that ask,
and the circumstances around them."""

from __future__ import annotations

from datetime import date

from shared.contracts.pipeline import PipelineState
from shared.contracts.question import Measure
from services.text.reading import asking_and_circumstances, new_query, read_question, reread


def test_a_forum_question_is_its_asking_sentences_and_its_story() -> None:
    question = (
        "I got a company car in March and my boss says the fuel card is a perk. "
        "It is a diesel and I drive 20,000 miles a year. Is the fuel taxed on top of the car? "
        "And can I pay some of it back"
    )
    asking, story = asking_and_circumstances(question)
    assert asking == ["Is the fuel taxed on top of the car?", "And can I pay some of it back"]
    assert story[0].startswith("I got a company car") and "diesel" in story[1]
    assert asking_and_circumstances("How much is the mileage rate?") == (["How much is the mileage rate?"], [])


def test_a_question_typed_as_a_statement_asks_in_its_last_sentence() -> None:
    asking, story = asking_and_circumstances("My employer pays for my gym. I would like to know the tax position")
    assert asking == ["I would like to know the tax position"] and story == ["My employer pays for my gym."]


def test_a_sentence_opening_as_a_question_asks_without_its_question_mark() -> None:
    asking, _ = asking_and_circumstances("We lend staff season tickets. whether that is a benefit. Thanks.")
    assert asking == ["whether that is a benefit."]


# ---- the question read once (QuestionReading), carried on the message ------------------------


def test_a_question_is_read_once_into_what_it_asks() -> None:
    reading = read_question("My car emits 70 g/km and cost \u00a320,000. What is the appropriate percentage for 2013-14?")
    assert reading.kind == "figure" and reading.asks_rate and not reading.asks_example
    assert reading.amounts == [20000.0] and Measure(70.0, "g/km") in reading.numbers
    assert reading.when == date(2013, 4, 6)  # the tax year's first day keys a table row
    assert reading.asking == ["What is the appropriate percentage for 2013-14?"] and reading.circumstances[0].startswith("My car")
    assert reading.facts == ["20000", "2013-14", "70"] and reading.words == 15
    assert read_question("Can you show me a worked example of the van benefit?").asks_example
    assert read_question("Is my gym membership taxable?").kind == "yes_no"


def test_the_askers_amounts_are_this_turns_not_the_searched_texts() -> None:
    searched = "And what was the official rate in 2009-10? My employer lent me \u00a33,600 for a season ticket."
    reading = read_question(searched, own_words="And what was the official rate in 2009-10?")
    assert reading.amounts == []  # the earlier turn's loan is not asked about now
    assert read_question(searched).amounts == [3600.0]


def test_the_reading_crosses_the_wire_intact_and_is_renewed_with_the_searched_text() -> None:
    query = new_query(id="q", question="My car emits 70 g/km. What is the appropriate percentage for 2013-14?", manual="employment-income-manual")
    wired = PipelineState.model_validate_json(PipelineState(query=query).model_dump_json()).query  # as a Celery hop carries it
    assert wired.reading == query.reading and isinstance(wired.reading.numbers[0], Measure) and wired.reading.when == date(2013, 4, 6)
    moved = reread(query, "What is the official rate of interest?", asked=query.question)
    assert moved.reading == read_question("What is the official rate of interest?") and moved.asked == query.question
    assert moved.reading.numbers == [] and moved.reading.when is None  # nothing of the old text's reading is left

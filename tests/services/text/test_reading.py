"""Reading a question as people write it (services/text/reading.py): the sentences that ask,
and the circumstances around them."""

from __future__ import annotations

from services.text.reading import asking_and_circumstances, asking_part


def test_a_forum_question_is_its_asking_sentences_and_its_story() -> None:
    question = (
        "I got a company car in March and my boss says the fuel card is a perk. "
        "It is a diesel and I drive 20,000 miles a year. Is the fuel taxed on top of the car? "
        "And can I pay some of it back"
    )
    asking, story = asking_and_circumstances(question)
    assert asking == ["Is the fuel taxed on top of the car?", "And can I pay some of it back"]
    assert story[0].startswith("I got a company car") and "diesel" in story[1]
    assert asking_part("How much is the mileage rate?") == "How much is the mileage rate?"


def test_a_question_typed_as_a_statement_asks_in_its_last_sentence() -> None:
    asking, story = asking_and_circumstances("My employer pays for my gym. I would like to know the tax position")
    assert asking == ["I would like to know the tax position"] and story == ["My employer pays for my gym."]


def test_a_sentence_opening_as_a_question_asks_without_its_question_mark() -> None:
    asking, _ = asking_and_circumstances("We lend staff season tickets. whether that is a benefit. Thanks.")
    assert asking == ["whether that is a benefit."]

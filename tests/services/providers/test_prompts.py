"""What the Mistral provider says to the model, kept in one module (services/providers/prompts.py)."""

from __future__ import annotations

from services.providers import mistral, prompts
from shared.config import AnswerShape

NUMBERS = {6: "six"}


def test_the_stitching_prompt_asks_for_the_default_answer_shape() -> None:
    # the prompt states the shape in words; a changed default must change the prompt with it
    shape = AnswerShape()
    assert f"At most\n{NUMBERS[shape.claims]} short plain sentences, about {shape.words} words in all" in prompts.STITCH_SYSTEM


def test_the_messages_are_built_from_the_templates() -> None:
    assert prompts.SELECT_USER.format(question="Q?", pages="P") == "Question: Q?\n\nPages:\nP"
    assert prompts.PARAGRAPH_ENTRY.format(id="EIM1#c0.p0", text="{not a field}") == "[EIM1#c0.p0] {not a field}"
    claim = prompts.VERIFY_CLAIM.format(n=0, text="A claim.", cited=prompts.NOTHING_CITED)
    assert prompts.VERIFY_USER.format(question="Q?", claims=claim) == "Question: Q?\n\nClaim 0: A claim.\nCited text:\n(none)"
    assert prompts.RETRY_USER.format(problem=ValueError("bad")) == "That reply was rejected (bad). Reply again with JSON only, exactly as specified."


def test_the_provider_holds_no_prompt_of_its_own() -> None:
    assert all(not (name.endswith(("_SYSTEM", "_USER")) and getattr(mistral, name) is not getattr(prompts, name)) for name in dir(mistral))

"""Reading a turn with the conversation so far (services/conversations/reading.py), on the real slice."""

from __future__ import annotations

import pytest

from services.answering.stages.follow_up import condition_step, follow_up_step
from services.conversations.reading import read_turn, searched_question, year_referred_to
from services.conversations.store import as_turn, follow_up_info, new_turn_state
from services.runtime.dispatch import submit
from services.runtime.question_store import MemoryStore, wait_result
from shared.config import Settings
from shared.contracts.conversation import ConversationContext, ConversationQuestion, PendingTurn
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, PipelineState, RollupResult
from services.text.reading import new_query
from services.answering.pipeline import answering_for
from shared.index import CorpusIndex

MILEAGE = "How much can my employer pay me per mile, tax free, when I drive my own car on business trips?"


@pytest.fixture(scope="module")
def earlier(slice_settings):
    state = new_turn_state(ConversationQuestion(question=MILEAGE), [], slice_settings)
    pending = PendingTurn(turn=1, question_id=state.query.id, question=MILEAGE, follow_up=follow_up_info(state))
    store = MemoryStore()
    return [as_turn(wait_result(store, submit(state, slice_settings, store)), "c", pending)]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("And for a motorcycle?", "follow_up"),  # a leading link
        ("Could I use my bicycle instead?", "follow_up"),  # points back
        ("Is the figure the same?", "follow_up"),  # short, leans on its context
        ("Our staff Christmas party costs £100 a head. Is it a taxable benefit for the employees?", "new_subject"),
        ("What is the van benefit charge for a company van used privately?", "new_subject"),
    ],
)
def test_follow_up_or_new_subject(earlier, slice_settings, question, kind):
    searched, context = read_turn(ConversationQuestion(question=question), earlier, slice_settings, answering_for(slice_settings).open)
    assert context.kind == kind and context.asked == question
    if kind == "follow_up":
        assert context.reasons and searched == f"{question} {MILEAGE}"
        assert "EIM31240" in context.carried_sections and context.claims
    else:
        assert searched == question and not context.carried_sections


def test_a_follow_up_naming_a_year_replaces_the_topics_years():
    topic = "What's the van benefit for 2014-15 and 2013/14?"
    assert searched_question("And for 2025-26?", topic) == "And for 2025-26? What's the van benefit for and ?"
    assert searched_question("And for an electric one?", topic) == f"And for an electric one? {topic}"


def test_that_year_means_the_latest_year_the_person_named(earlier):
    first = earlier[0]
    named = first.model_copy(update={"question": "And what was it back in 2010-11?", "turn": 2})
    assert year_referred_to("What if its emissions had been 110g/km that year?", [first, named]) == "2010-11"
    assert year_referred_to("And in the same tax year?", [named, first]) == "2010-11"  # the latest turn naming one
    assert year_referred_to("What if its emissions had been 110g/km that year?", [first]) is None  # none named: nothing to carry
    assert year_referred_to("And for 2012-13 that year?", [first, named]) is None  # it names its own
    assert year_referred_to("And this year?", [first, named]) is None  # this year is now, not an earlier one


def _sentence(text: str, pid: str) -> DraftSentence:
    return DraftSentence(text=text, citations=[pid])


def test_claims_already_made_move_behind_the_new_ones_and_unchosen_options_stay_out():
    context = ConversationContext(
        kind="follow_up", asked="q", claims=[{"text": "old", "citations": ["EIM1#c0.p0"]}], excluded_sections=["EIM2"]
    )
    state = PipelineState(query=new_query(id="x", question="q", manual="m"), context=context)
    state.draft = Draft(sentences=[_sentence("old", "EIM1#c0.p0"), _sentence("new", "EIM1#c0.p1"), DraftSentence(text="d", citations=["EIM1#c0.p2"], role="detail")])
    follow_up_step(state, Settings())
    assert [s.text for s in state.draft.sentences] == ["new", "old", "d"]
    only_old = Draft(sentences=[_sentence("old", "EIM1#c0.p0")])
    state.draft = only_old.model_copy(deep=True)
    follow_up_step(state, Settings())
    assert state.draft == only_old  # nothing new: the earlier claim is the answer
    state.rollup = RollupResult(pages=[PageBundle(section_id=s, score=1.0, chunks=[]) for s in ("EIM1", "EIM2")])
    condition_step(state, Settings())
    assert [p.section_id for p in state.rollup.pages] == ["EIM1"]


@pytest.mark.parametrize(
    ("asked", "promoted"),
    [
        ("And if I'm paid monthly?", "You may pay £18 per month to monthly paid employees."),
        ("What was it back in 2010-11?", "For 2008-09 to 2011-12 the rate was £3 per week."),
    ],
)
def test_a_follow_up_answer_leads_with_what_the_follow_up_adds(asked, promoted):
    context = ConversationContext(kind="follow_up", asked=asked, topic="How much can my employer pay me each week for working from home?")
    state = PipelineState(query=new_query(id="x", question=asked, manual="m"), context=context)
    sentences = [
        _sentence("You may pay £4 per week without records.", "EIM1#c0.p0"),
        DraftSentence(text="You may pay £18 per month to monthly paid employees.", citations=["EIM1#c0.p1"], role="detail"),
        DraftSentence(text="For 2008-09 to 2011-12 the rate was £3 per week.", citations=["EIM1#c0.p2"], role="detail"),
    ]
    state.draft = Draft(sentences=sentences)
    follow_up_step(state, Settings())
    first = state.draft.sentences[0]
    assert first.text == promoted and first.role == "answer"
    assert {s.text for s in state.draft.sentences} == {s.text for s in sentences}  # reordered, nothing lost


def test_a_word_written_as_one_meets_the_manuals_two():
    from services.answering.stages.retrieval import terms_with_compounds  # noqa: PLC0415
    from services.text.terms import terms  # noqa: PLC0415

    (motorcycle,) = terms("motorcycle")
    assert motorcycle in terms_with_compounds("Motor cycle | All | 24p")
    assert motorcycle not in terms_with_compounds("Car or van | First 10,000 | 45p")


def test_a_compound_word_names_the_manuals_row_for_it_and_not_its_neighbours():
    from services.text.tables import names_row_as_word  # noqa: PLC0415
    from services.text.terms import same_word, terms  # noqa: PLC0415

    (bicycle,) = terms("bicycle")
    (motorcycle,) = terms("motorcycle")
    assert names_row_as_word({bicycle}, "Cycle | All | 20p")
    assert not names_row_as_word({bicycle}, "Motor cycle | All | 24p")  # the label read as one word is another vehicle
    assert names_row_as_word({motorcycle}, "Motor cycle | All | 24p")
    assert not same_word("strip", "trip")  # a one-letter head is not a compound
    assert not same_word("bicycle", "le")  # nor is a tail too short to be a word of its own


def test_a_narrowing_follow_up_leads_with_the_carried_pages_row_for_its_condition(earlier, slice_settings):
    asked = "And if I do the trips on my bicycle?"
    state = new_turn_state(ConversationQuestion(question=asked), earlier, slice_settings)
    store = MemoryStore()
    result = wait_result(store, submit(state, slice_settings, store))
    answer = [s for s in result.answer.sentences if s.role == "answer"]
    assert "20p" in answer[0].text and answer[0].citations[0].startswith("EIM31240")
    assert "24p" not in answer[0].text  # the motor cycle row is not the bicycle's


def test_the_promoted_lead_keeps_the_answer_part_short_and_no_list_intro_alone():
    context = ConversationContext(kind="follow_up", asked="And for a van?", topic="What is the car benefit?")
    state = PipelineState(query=new_query(id="x", question="q", manual="m"), context=context)
    answer = [_sentence(f"Car rule {i}.", f"EIM1#c0.p{i}") for i in range(Settings().stitching.shape.claims - 1)]
    intro = _sentence("The conditions are:", "EIM1#c1.p0")
    van = DraftSentence(text="A van is taxed at a flat rate.", citations=["EIM1#c2.p0"], role="detail")
    state.draft = Draft(sentences=[*answer, intro, van])
    follow_up_step(state, Settings())
    roles = [(s.text, s.role) for s in state.draft.sentences]
    assert roles[0] == (van.text, "answer")
    answer_part = [t for t, role in roles if role == "answer"]
    assert len(answer_part) <= Settings().stitching.shape.claims and not answer_part[-1].endswith(":")
    assert {t for t, _ in roles} == {s.text for s in [*answer, intro, van]}  # pushed to the detail, not lost


def test_a_named_year_outranks_the_words_that_frame_it():
    asked = "What was the figure back in 2010-11?"
    context = ConversationContext(kind="follow_up", asked=asked, topic="How much can my employer pay me each week for working from home?")
    state = PipelineState(query=new_query(id="x", question=asked, manual="m"), context=context)
    framing = _sentence("From 2012-13 you need not justify that figure; 11 weeks are enough.", "EIM1#c0.p0")
    covering = DraftSentence(text="For 2008-09 to 2011-12 the rate was £3 per week.", citations=["EIM1#c0.p1"], role="detail")
    state.draft = Draft(sentences=[framing, covering])
    follow_up_step(state, Settings())
    assert state.draft.sentences[0].text == covering.text and state.draft.sentences[0].role == "answer"


def test_of_the_sentences_covering_a_named_year_the_one_stating_the_subject_leads():
    # EIM24830's fuel reduction and EIM24605's percentage both state a period covering 2010/11;
    # the follow-up asks the subject's question (the car's appropriate percentage) for that year
    asked = "And what was it back in 2010-11?"
    topic = "My company car is a petrol hybrid with CO2 emissions of 70g/km. What appropriate percentage is used for its benefit in 2013-14?"
    context = ConversationContext(kind="follow_up", asked=asked, topic=topic)
    state = PipelineState(query=new_query(id="x", question=asked, manual="m"), context=context)
    other = _sentence("For years from 2006/07 to 2010/11, the reduction is 2%.", "EIM24830#c3.p2")
    subject = DraftSentence(
        text="For 2010/11 and 2011/12, the appropriate percentage for a car with a CO2 emissions figure between 1-75 g/km is 5%.",
        citations=["EIM24605#c3.p1"], role="detail",
    )
    state.draft = Draft(sentences=[other, subject])
    follow_up_step(state, Settings())
    assert [s.text for s in state.draft.sentences] == [subject.text, other.text]
    assert all(s.role == "answer" for s in state.draft.sentences)


def test_an_earlier_year_finds_the_old_rule_stated_as_a_period_ending_later():
    from services.answering.stages.follow_up import in_earlier_period  # noqa: PLC0415

    assert in_earlier_period("For awards made on or before 12 June 2003 the limit was £20 per year of service.", 2002)
    assert in_earlier_period("For 2002/03 and earlier years, some awards were exempt.", 2001)
    assert not in_earlier_period("For awards made on or before 12 June 2003 the limit was £20.", 2005)  # after the end
    assert not in_earlier_period("From 6 April 2012 you can pay £4 per week.", 2013)  # the current rule: not an old one
    asked = "And if we had made the award in 2002?"
    context = ConversationContext(kind="follow_up", asked=asked, topic="What can we give a worker for 25 years of service tax free?")
    state = PipelineState(query=new_query(id="x", question=asked, manual="m"), context=context)
    current = _sentence("The limit is £50 for each year of service.", "EIM1#c0.p0")
    old = DraftSentence(text="For awards made on or before 12 June 2003 the limit was £20 per year of service.", citations=["EIM1#c0.p1"], role="detail")
    state.draft = Draft(sentences=[current, old])
    follow_up_step(state, Settings())
    assert state.draft.sentences[0].text == old.text


def test_a_follow_up_also_carries_the_pages_its_subjects_cited_pages_link_to(earlier, slice_settings):
    from shared.index import CorpusIndex  # noqa: PLC0415

    _, context = read_turn(ConversationQuestion(question="And for a motorcycle?"), earlier, slice_settings, answering_for(slice_settings).open)
    index = CorpusIndex.open(slice_settings, "employment-income-manual")
    cited = {c.section_id for c in earlier[0].citations if any(c.paragraph_id in s.citations for s in earlier[0].answer.sentences if s.role == "answer")}
    one_hop = {x.target_section for s in cited for x in index.xrefs_from(s) if x.target_section in index.pages}
    assert context.linked_sections and set(context.linked_sections) <= one_hop
    assert set(one_hop) - set(context.carried_sections) <= set(context.linked_sections)  # every one-hop page not already carried
    assert not set(context.linked_sections) & set(context.carried_sections)


def test_of_two_sentences_naming_the_condition_the_one_closest_in_meaning_to_the_follow_up_leads(slice_settings):
    from shared.contracts.pipeline import RetrievalResult  # noqa: PLC0415
    from shared.index import CorpusIndex  # noqa: PLC0415

    index = CorpusIndex.open(slice_settings, "employment-income-manual")
    passengers, vans = index.page_chunks("EIM31405")[0], index.page_chunks("EIM22790")[0]
    asked = "And what about the limit?"
    context = ConversationContext(kind="follow_up", asked=asked, topic="What may my employer pay me for carrying a colleague?")
    for near, far in ((passengers, vans), (vans, passengers)):
        state = PipelineState(query=new_query(id="x", question=asked, manual="employment-income-manual"), context=context)
        state.retrieval = RetrievalResult(hits=[], query_vector=[float(x) for x in index.chunk_vector(near.id)])
        state.draft = Draft(
            sentences=[_sentence("The limit for this one is set by statute.", far.paragraphs[0].id), _sentence("The limit for that one is set by statute.", near.paragraphs[0].id)]
        )
        follow_up_step(state, slice_settings, index)
        assert state.draft.sentences[0].citations == [near.paragraphs[0].id]  # both name 'limit': meaning settles it


def test_a_subject_page_sentence_naming_the_condition_joins_a_draft_that_names_it_only_in_passing(slice_settings):
    from shared.contracts.pipeline import SelectionResult  # noqa: PLC0415
    from shared.index import CorpusIndex  # noqa: PLC0415

    index = CorpusIndex.open(slice_settings, "employment-income-manual")
    page = PageBundle(section_id="EIM31405", score=1.0, chunks=index.page_chunks("EIM31405"))
    asked = "And if they are carried simultaneously?"
    context = ConversationContext(kind="follow_up", asked=asked, topic="How much can my employer pay me for passengers?", linked_sections=["EIM31405"])
    state = PipelineState(query=new_query(id="x", question=asked, manual="employment-income-manual"), context=context)
    state.selection = SelectionResult(pages=[page], dropped=[])
    state.draft = Draft(sentences=[_sentence("Payments are made for passengers.", page.chunks[0].paragraphs[0].id)])
    follow_up_step(state, slice_settings, index)
    lead = [s for s in state.draft.sentences if s.role == "answer"][:2]
    # the sentence naming the condition joins with the sentence before it in its paragraph
    # ('... therefore counted more than once ...' leans on it), in the manual's order
    assert "simultaneously" in lead[1].text and lead[0].text.startswith("If more than one passenger is carried")
    assert lead[0].citations == lead[1].citations
    # a paragraph sentence the draft already quotes inside a longer claim is not quoted again
    first = lead[0].text
    state.draft = Draft(sentences=[_sentence(f"{first} More follows.", page.chunks[0].paragraphs[0].id)])
    follow_up_step(state, slice_settings, index)
    assert not any(s.text == first for s in state.draft.sentences) and "simultaneously" in state.draft.sentences[0].text
    context.linked_sections = []  # not a page of the subject: nothing joins
    state.draft = Draft(sentences=[_sentence("Payments are made for passengers.", page.chunks[0].paragraphs[0].id)])
    follow_up_step(state, slice_settings, index)
    assert [s.text for s in state.draft.sentences] == ["Payments are made for passengers."]


def test_a_follow_up_nothing_on_the_pages_answers_leads_with_the_previous_turns_claims_still_on_its_pages():
    from shared.contracts.pipeline import SelectionResult  # noqa: PLC0415

    claims = [
        {"text": "Meals on cycle-to-work days were exempt.", "citations": ["EIM2#c0.p0"], "turn": 2},
        {"text": "Canteen meals are exempt.", "citations": ["EIM3#c0.p0"], "turn": 2},  # its page is not selected again
        {"text": "Loaned cycles are exempt.", "citations": ["EIM1#c0.p0"], "turn": 1},  # an older turn's
    ]
    asked = "And if we had done it in 1999?"
    context = ConversationContext(kind="follow_up", asked=asked, topic="Are loaned cycles taxable?", claims=claims)
    state = PipelineState(query=new_query(id="x", question=asked, manual="m"), context=context)
    state.selection = SelectionResult(pages=[PageBundle(section_id=s, score=1.0, chunks=[]) for s in ("EIM1", "EIM2")], dropped=[])
    state.draft = Draft(sentences=[_sentence("Loaned cycles are exempt.", "EIM1#c0.p0"), _sentence("Helmets count too.", "EIM1#c0.p1")])
    follow_up_step(state, Settings())
    texts = [s.text for s in state.draft.sentences]
    assert texts[0] == "Meals on cycle-to-work days were exempt." and state.draft.sentences[0].role == "answer"
    assert "Canteen meals are exempt." not in texts and texts.count("Loaned cycles are exempt.") == 1


def test_a_follow_up_is_routed_on_its_own_words_meaning_not_its_topics(corpus_dir, settings_for, tmp_path):
    from ingest_worker.ingest import run_ingest  # noqa: PLC0415
    from services.answering.refusals import decide  # noqa: PLC0415
    from services.answering.stages import retrieval  # noqa: PLC0415
    from tests.conftest import small_corpus  # noqa: PLC0415

    eim, bim = "employment-income-manual", "business-income-manual"
    pages = {eim: ["EIM68600", "EIM68610", "EIM32366", "EIM32360"], bim: ["BIM51130", "BIM37910", "BIM37900", "BIM51100"]}
    source = small_corpus(corpus_dir, tmp_path / "corpus", pages)
    settings = settings_for(tmp_path / "data")
    for manual in pages:
        run_ingest(settings, str(source), manual)
    topic = "I sit as a Recorder and get sent to courts all over England and Wales. Are the travel and subsistence allowances I'm paid taxable?"
    asked = "And in my own practice as a self-employed barrister, can I deduct what I spend replacing my wig and gown from my fees?"
    context = ConversationContext(kind="follow_up", asked=asked, topic=topic, carried_sections=["EIM68610"])
    state = PipelineState(query=new_query(id="x", question=f"{asked} {topic}", manual=eim), context=context)
    state = retrieval.step(state, settings, CorpusIndex.open(settings))
    refusal = decide.refusal(state, settings)  # retrieval found the routes; the refusal module decides
    assert refusal is not None and refusal.category == "out_of_scope"
    assert [r.manual for r in state.routes] == [bim]
    alone = retrieval.step(PipelineState(query=new_query(id="y", question=asked, manual=eim)), settings, CorpusIndex.open(settings, eim))
    # the evidence is the follow-up's own words', as if asked alone (not the topic's meaning)
    assert [(r.manual, round(r.score, 6)) for r in state.routes] == [(r.manual, round(r.score, 6)) for r in alone.routes]


def test_a_joining_sentence_brings_its_paragraph_but_a_worked_examples_sentence_comes_alone(slice_settings):
    from services.answering.stages.follow_up import condition_claims  # noqa: PLC0415
    from services.text.terms import terms  # noqa: PLC0415
    from shared.contracts.pipeline import SelectionResult  # noqa: PLC0415
    from shared.index import CorpusIndex  # noqa: PLC0415

    index = CorpusIndex.open(slice_settings, "employment-income-manual")
    state = PipelineState(query=new_query(id="x", question="q", manual="employment-income-manual"))
    pages = [PageBundle(section_id=s, score=1.0, chunks=index.page_chunks(s)) for s in ("EIM31405", "EIM31415")]
    state.selection = SelectionResult(pages=pages, dropped=[])
    found = condition_claims(state, ["EIM31405", "EIM31415"], set(terms("simultaneously")) | set(terms("illustrates")), [], slice_settings.stitching)
    by_page = {claim.citations[0].split("#")[0]: (claim, whole) for _, claim, whole in found}
    rule, rule_paragraph = by_page["EIM31405"]
    assert len(rule_paragraph) == 2 and rule_paragraph[1].text == rule.text  # the sentence before it comes too
    example, alone = by_page["EIM31415"]
    assert alone == [example]  # the example page's paragraph is not retold


def test_a_joining_sentence_comes_with_its_pages_notice_that_the_rule_has_ended():
    from services.answering.stages.follow_up import condition_claims  # noqa: PLC0415
    from services.text.terms import terms  # noqa: PLC0415
    from shared.contracts.corpus import Chunk, Paragraph  # noqa: PLC0415
    from shared.contracts.pipeline import SelectionResult  # noqa: PLC0415

    def page(section: str, opening: str) -> PageBundle:
        texts = [opening, "Employers may designate cycle to work days.", "A free breakfast on those days is exempt."]
        paragraphs = [Paragraph(id=f"{section}#c0.p{i}", text=t) for i, t in enumerate(texts)]
        return PageBundle(section_id=section, score=1.0, chunks=[Chunk(id=f"{section}#c0", section_id=section, manual="m", position=0, heading_path=[], paragraphs=paragraphs, content_hash="h")])

    state = PipelineState(query=new_query(id="x", question="q", manual="m"))
    state.selection = SelectionResult(pages=[page("EIM1", "THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013"), page("EIM2", "Some employers run schemes.")], dropped=[])
    found = condition_claims(state, ["EIM1", "EIM2"], set(terms("breakfast")), [], Settings().stitching)
    by_page = {claim.citations[0].split("#")[0]: whole for _, claim, whole in found}
    assert [c.text for c in by_page["EIM1"]] == ["THIS RELIEF WAS WITHDRAWN FROM 6 APRIL 2013", "A free breakfast on those days is exempt."]
    assert [c.text for c in by_page["EIM2"]] == ["A free breakfast on those days is exempt."]  # an ordinary opening line does not come

"""The question stages on the real ingested EIM slice (``slice_settings``, tests/conftest.py):
retrieval, expansion, rollup, selection (both strategies), stitching, verification, and the
pipeline end to end with every refusal category it can reach."""

from __future__ import annotations

import json

import pytest

from services.runtime.dispatch import answer
from services.answering.pipeline import STAGES, candidate_ids, finish, new_state, run_stage, stages_through
from services.providers.base import paragraphs_of
from services.ranking.rankers import page_ranker
from services.answering.stages import expansion, retrieval, rollup, verification
from services.answering.stages.verification import check_claim
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult
from shared.contracts.corpus import section_of
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, PipelineState, RollupResult, ScoredChunk
from services.text.reading import new_query, reread
from shared.index import CorpusIndex

MILEAGE = "How much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?"
VAN = "I've got a works van that I take home at weekends and the firm pays for all the diesel. What is the taxable benefit for 2014-15?"


def _variant(settings: Settings, **sections: dict) -> Settings:
    update = {name: getattr(settings, name).model_copy(update=values) for name, values in sections.items()}
    return settings.model_copy(update=update)


def state_after(question: str, settings: Settings, upto: str) -> PipelineState:
    state = new_state(QuestionRequest(question=question), settings)
    for stage in STAGES:
        state = run_stage(stage, state, settings)
        if stage.name == upto:
            break
    return state


# ---- retrieval ---------------------------------------------------------------------------


def test_retrieval_fuses_both_lists_and_caps_pages(slice_settings: Settings) -> None:
    result, _ = retrieval.retrieve(new_query(id="q", question=MILEAGE, manual=slice_settings.manual), slice_settings, CorpusIndex.open(slice_settings))
    assert 0 < len(result.hits) <= slice_settings.retrieval.top_k
    assert len(result.query_vector) == 384
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    per_page: dict[str, int] = {}
    for hit in result.hits:
        per_page[section_of(hit.chunk_id)] = per_page.get(section_of(hit.chunk_id), 0) + 1
    assert max(per_page.values()) <= slice_settings.retrieval.max_chunks_per_page
    assert any(h.source == "hybrid" for h in result.hits)
    assert {section_of(h.chunk_id) for h in result.hits} & {"EIM31240", "EIM31230", "EIM31355"}


@pytest.mark.parametrize("flag, source", [("use_bm25", "vector"), ("use_vectors", "bm25")])
def test_retrieval_single_list_variants(slice_settings: Settings, flag: str, source: str) -> None:
    settings = _variant(slice_settings, retrieval={flag: False})
    result, _ = retrieval.retrieve(new_query(id="q", question=MILEAGE, manual=settings.manual), settings, CorpusIndex.open(settings))
    assert result.hits and {h.source for h in result.hits} == {source}
    assert (result.query_vector == []) == (source == "bm25")


# ---- expansion and rollup ---------------------------------------------------------------


def test_expansion_neighbours_rank_strictly_below_their_source(slice_settings: Settings) -> None:
    state = state_after(VAN, slice_settings, "retrieval")
    expanded = expansion.expand(state.query, state.retrieval, slice_settings, CorpusIndex.open(slice_settings))
    hits = {h.chunk_id: h for h in state.retrieval.hits}
    neighbours = [h for h in expanded.hits if h.chunk_id not in hits]
    assert neighbours, "the slice's van pages link to each other: expansion must bring some in"
    assert {h.source for h in neighbours} <= {"xref", "sibling"}
    index = CorpusIndex.open(slice_settings)
    for n in neighbours:
        # a source is a hit, or (co-citation) a candidate page that itself came in below a hit
        sources = [h for h in expanded.hits if h is not n and (h.chunk_id == n.via or section_of(h.chunk_id) == n.via)]
        assert sources and n.score < max(s.score for s in sources)
        if n.source == "xref":
            assert any(x.target_section == section_of(n.chunk_id) for x in index.xrefs_from(n.via))
    # the retrieval hits keep their own scores
    assert all(hits[h.chunk_id].score == h.score for h in expanded.hits if h.chunk_id in hits)


def test_expansion_off_returns_the_hits(slice_settings: Settings) -> None:
    state = state_after(VAN, slice_settings, "retrieval")
    settings = _variant(slice_settings, expansion={"enabled": False})
    assert expansion.expand(state.query, state.retrieval, settings, CorpusIndex.open(settings)).hits == state.retrieval.hits


def test_rollup_whole_page_best_chunk_first_and_hit_only_variant(slice_settings: Settings) -> None:
    state = state_after(MILEAGE, slice_settings, "expansion")
    index = CorpusIndex.open(slice_settings)
    scores = {h.chunk_id: h.score for h in state.expansion.hits}
    whole = rollup.rollup(state.query, state.expansion, slice_settings, CorpusIndex.open(slice_settings))
    for page in whole.pages:
        page_ids = [c.id for c in index.page_chunks(page.section_id)]
        assert len(page.chunks) == min(len(page_ids), slice_settings.rollup.max_chunks_per_page)
        best = max((c for c in page.chunks if c.id in scores), key=lambda c: scores[c.id])
        assert page.chunks[0].id == best.id
    assert [p.score for p in whole.pages] == sorted((p.score for p in whole.pages), reverse=True)
    hit_only = rollup.rollup(state.query, state.expansion, _variant(slice_settings, rollup={"whole_page": False}), CorpusIndex.open(slice_settings))
    assert all(c.id in scores for p in hit_only.pages for c in p.chunks)
    assert sum(len(p.chunks) for p in hit_only.pages) < sum(len(p.chunks) for p in whole.pages)


# ---- selection ---------------------------------------------------------------------------


def test_recall_greedy_keeps_the_rate_table_and_strict_keeps_fewer(slice_settings: Settings) -> None:
    greedy = state_after(MILEAGE, slice_settings, "selection")
    strict_settings = _variant(slice_settings, selection={"strategy": "strict"})
    strict = state_after(MILEAGE, strict_settings, "selection")
    kept = [p.section_id for p in greedy.selection.pages]
    assert "EIM31240" in kept  # the statutory rate table answers a rate question
    assert strict.selection.pages and len(strict.selection.pages) < len(kept)
    assert set(greedy.selection.dropped).isdisjoint(kept)


def test_each_part_of_a_question_keeps_its_best_page(slice_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from services.providers.local import selection  # noqa: PLC0415
    from services.text.question import sub_questions  # noqa: PLC0415

    index = CorpusIndex.open(slice_settings)
    question = "Can my employer repay my business motoring costs in my own car tax-free, and is a works van taxable?"
    mileage = ["EIM31240", "EIM31210", "EIM31230"]
    bundles = {sid: PageBundle(section_id=sid, score=1.0, chunks=index.page_chunks(sid)) for sid in [*mileage, "EIM22790", "EIM01500"]}
    # The mileage pages lead; the van page is just below the recall-greedy margin, the long
    # service page well below it (relevances as selection would have scored them).
    # (scaled to the ranker's answering threshold, under which only the pages near the best are kept)
    t = page_ranker(slice_settings).answering_threshold
    relevance = dict.fromkeys(mileage, t) | {"EIM22790": 0.4 * t, "EIM01500": 0.1 * t}
    monkeypatch.setattr(
        selection, "score_pages", lambda query, rollup, settings, index, model, carried_vector, asked="", subject=None: [selection.PageScore(b, 0.5, 0.5, False, relevance[sid]) for sid, b in bundles.items()]
    )
    query = new_query(id="q", question=question, manual=slice_settings.manual)
    rollup_result = RollupResult(pages=list(bundles.values()))
    assert sub_questions(question) == ["Can my employer repay my business motoring costs in my own car tax-free", "is a works van taxable?"]
    model = page_ranker(slice_settings)
    kept = [p.section_id for p in selection.select(query, rollup_result, slice_settings, index, model, []).pages]
    assert "EIM22790" in kept and "EIM01500" not in kept  # the van part's page; not a page below PART_RATIO
    # asked as one thing, the same scores keep the mileage pages only
    one_part = reread(query, "Can my employer repay my business motoring costs in my own car or a works van tax-free?")
    assert [p.section_id for p in selection.select(one_part, rollup_result, slice_settings, index, model, []).pages] == mileage


# ---- stitching and verification -----------------------------------------------------------


def test_stitching_quotes_only_selected_paragraphs_in_order_one_marker_a_paragraph(slice_settings: Settings) -> None:
    state = state_after(MILEAGE, slice_settings, "stitching")
    allowed = paragraphs_of(state.selection)
    headings = verification.headings_of(state.selection)
    assert state.draft.sentences
    for sentence in state.draft.sentences:
        # a claim cites each paragraph it quotes once (a split sentence, a list's lead-in and items)
        assert sentence.citations and all(c in allowed for c in sentence.citations) and len(set(sentence.citations)) == len(sentence.citations)
        quoted = " ".join(" ".join(allowed[c].text.split()) for c in sentence.citations)
        if allowed[sentence.citations[0]].kind != "table":  # a table row is rendered with its headers
            assert " ".join(sentence.text.split()) in quoted or sentence.text == headings.get(sentence.citations[0])
    text = " ".join(s.text for s in state.draft.sentences)
    assert "45p" in text  # the current rate row of EIM31240's table


def test_the_answer_comes_first_then_a_bounded_detail_from_the_same_pages(slice_settings: Settings) -> None:
    state = state_after(MILEAGE, slice_settings, "verification")
    roles = [s.role for s in state.draft.sentences]
    assert "answer" in roles and "detail" in roles, roles
    # answer sentences first, then detail; never interleaved
    assert roles == sorted(roles, key=lambda r: r != "answer")
    answer = [s for s in state.draft.sentences if s.role == "answer"]
    detail = [s for s in state.draft.sentences if s.role == "detail"]
    assert len(answer) <= slice_settings.stitching.shape.claims
    assert sum(len(s.text.split()) for s in [*answer, *detail]) <= slice_settings.stitching.local.reply_words
    # the detail adds sentences the answer does not already quote, from the selected pages
    assert not {s.text for s in answer} & {s.text for s in detail}
    allowed = paragraphs_of(state.selection)
    assert all(s.citations[0] in allowed for s in detail)
    # verification keeps each claim's role
    assert [s.role for s in state.verification.sentences] == roles


def test_verification_floor_turns_a_bad_draft_into_a_refusal(slice_settings: Settings) -> None:
    state = state_after(MILEAGE, slice_settings, "stitching")
    real = state.draft.sentences[0]
    state.draft = Draft(
        sentences=[
            real,
            DraftSentence(text="Employers may pay 90p a mile free of tax.", citations=real.citations),
            DraftSentence(text="Mileage payments are always exempt.", citations=["EIM99999#c0.p0"]),
        ]
    )
    state = run_stage(stages_through("verification")[-1], state, slice_settings)  # the stage, then the refusal module's decision
    verdicts = [s.verdict for s in state.verification.sentences]
    assert verdicts[0] == "supported" and verdicts[2] == "unsupported"
    assert verdicts[1] in {"contradicted", "unsupported", "partially_supported"}
    assert state.verification.faithfulness == pytest.approx(1 / 3)
    assert state.refusal is not None and state.refusal.category == "low_coverage"
    assert state.refusal.evidence.faithfulness < slice_settings.verification.faithfulness_floor


def test_stitching_conflict_between_two_selected_pages(slice_settings: Settings) -> None:
    state = state_after(MILEAGE, slice_settings, "selection")
    state.selection = state.selection.model_copy(deep=True)  # the pages hold the index's own chunks
    # the first two pages, each down to one statement: the answer part quotes each of its first pages
    for page, text in zip(state.selection.pages[:2], ("The approved amount for a car is 45p a mile.", "The approved amount for a car is 40p a mile."), strict=True):
        chunk = next(c for c in page.chunks if any(p.kind == "p" for p in c.paragraphs))
        chunk.paragraphs = [next(p for p in chunk.paragraphs if p.kind == "p")]
        chunk.paragraphs[0].text = text
        page.chunks = [chunk]
    a, b = (page.chunks[0].paragraphs[0] for page in state.selection.pages[:2])
    state = run_stage(stages_through("stitching")[-1], state, _variant(slice_settings))
    # The stitcher quoted both and they disagree.
    assert state.refusal is not None and state.refusal.category == "conflict", state.draft
    assert set(state.refusal.evidence.paragraph_ids) == {a.id, b.id}


# ---- the pipeline end to end ----------------------------------------------------------------


def test_answer_end_to_end_with_citations_and_trace(slice_settings: Settings) -> None:
    events: list[str] = []
    result = answer(QuestionRequest(question=MILEAGE), slice_settings, on_event=lambda name, trace: events.append(name))
    assert result.status == "answered" and result.answer is not None
    assert events == ["retrieval", "expansion", "rollup", "selection", "stitching", "marks", "verification"]
    assert [t.stage for t in result.trace] == events
    by_id = {c.paragraph_id: c for c in result.citations}
    for sentence in result.answer.sentences:
        assert sentence.citations and all(c in by_id for c in sentence.citations)
        assert sentence.reason
    assert result.answer.faithfulness >= slice_settings.verification.faithfulness_floor
    citation = by_id[result.answer.sentences[0].citations[0]]
    assert citation.url.startswith("https://www.gov.uk/hmrc-internal-manuals/employment-income-manual/")
    assert citation.section_id == section_of(citation.paragraph_id) and citation.title and citation.heading_path
    assert citation.public_updated_at.year == 2014
    # every claim's figures are in its cited paragraph
    index = CorpusIndex.open(slice_settings)
    for sentence in result.answer.sentences:
        assert check_claim(sentence.text, [index.paragraph(c) for c in sentence.citations])[0] == "supported"


@pytest.mark.parametrize(
    "question, category",
    [
        ("asdf ;; qwerty ?? 7#k lorem zz", "malformed"),
        ("What's the VAT registration threshold for my small business?", "out_of_scope"),
        ("Under the optional remuneration arrangement (OpRA) rules, how is my van valued?", "low_coverage"),
        ("What is the capital of France?", "low_coverage"),  # in no tax regime, and near no page
        ("What's the van benefit charge for the 2025-26 tax year?", "stale"),
    ],
)
def test_refusals_end_to_end(slice_settings: Settings, question: str, category: str) -> None:
    result = answer(QuestionRequest(question=question), slice_settings)
    assert result.status == "refused" and result.refusal is not None
    assert result.refusal.category == category
    assert result.answer is None
    if category in {"malformed", "out_of_scope"}:
        assert result.trace == []  # no retrieval or model cost
    if category == "stale":
        assert result.refusal.evidence.asked_for == "2025-26"
        assert {c.section_id for c in result.citations} <= {p.section_id for p in result.refusal.evidence.pages}


def test_candidate_ids_per_stage(slice_settings: Settings) -> None:
    state = state_after(MILEAGE, slice_settings, "verification")
    assert all("#" in c for c in candidate_ids("retrieval", state))
    assert all("#" not in s for s in candidate_ids("selection", state))
    assert all(".p" in c for c in candidate_ids("verification", state))
    assert candidate_ids("no-such-stage", state) == []


def test_finish_refuses_an_unfinished_state(slice_settings: Settings) -> None:
    state = state_after(MILEAGE, slice_settings, "selection")
    with pytest.raises(ValueError):
        finish(state, slice_settings)


def test_cli_ask_prints_the_api_json(slice_settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from shared.cli_common import Exit
    from taxnav.cli import main

    monkeypatch.setenv("TAXNAV_INGEST__EMBEDDING_CACHE_DIR", str(slice_settings.ingest.embedding_cache_dir))
    assert main(["ask", "--data-dir", str(slice_settings.data_dir), "--json", MILEAGE]) == 0
    result = QuestionResult.model_validate(json.loads(capsys.readouterr().out))
    assert result.status == "answered" and result.citations
    assert main(["ask", "--data-dir", str(slice_settings.data_dir), "   "]) == Exit.REFUSED
    assert "Refused: malformed" in capsys.readouterr().out


def test_cli_ask_without_an_index_is_a_clear_error(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    from taxnav.cli import main

    assert main(["ask", "--data-dir", str(tmp_path), "How much is the van benefit?"]) == 2
    assert "taxnav ingest" in capsys.readouterr().err


def test_cocitation_brings_a_page_several_candidates_link_to(slice_settings: Settings) -> None:
    index = CorpusIndex.open(slice_settings)
    linkers: dict[str, list[str]] = {}
    for section in index.pages:
        for target in {x.target_section for x in index.xrefs_from(section)}:
            if target in index.pages and target != section:
                linkers.setdefault(target, []).append(section)
    target, sources = next((t, s) for t, s in sorted(linkers.items()) if len(s) >= expansion.COCITED_MIN)
    candidates = [
        ScoredChunk(chunk_id=index.page_chunks(s)[0].id, score=0.01 * (i + 1), source="bm25")
        for i, s in enumerate(sources[: expansion.COCITED_MIN])
    ]
    found = expansion.cocited(index, candidates, slice_settings.manual)
    assert target in found
    score, via = found[target]
    assert via == sources[expansion.COCITED_MIN - 1] and score == pytest.approx(0.01 * expansion.COCITED_MIN)  # the best linker
    # one linking page is not enough, and a candidate page is never brought in again
    assert target not in expansion.cocited(index, candidates[:1], slice_settings.manual)
    assert not set(found) & set(sources[: expansion.COCITED_MIN])


def test_selection_leaves_the_candidates_ids_but_not_their_texts(slice_settings: Settings) -> None:
    before = state_after(MILEAGE, slice_settings, "rollup")
    ids = [p.section_id for p in before.rollup.pages]
    after = run_stage(stages_through("selection")[-1], before.model_copy(deep=True), slice_settings)
    assert [p.section_id for p in after.rollup.pages] == ids and not any(p.chunks for p in after.rollup.pages)
    assert after.selection.pages and all(p.chunks for p in after.selection.pages)  # what stitching reads
    assert len(after.model_dump_json()) < len(before.model_dump_json()) + len(after.selection.model_dump_json())

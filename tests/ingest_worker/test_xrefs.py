"""Cross-reference extraction, range resolution and the graph; whole-EIM counts (no embedding)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest_worker.ingest import build_page
from ingest_worker.xrefs import build_graph, edge_counts, href_target, resolve, text_targets
from shared.contracts.corpus import RawRef
from tests.conftest import EIM


def test_href_targets() -> None:
    assert href_target("https://www.gov.uk/hmrc-internal-manuals/employment-income-manual/eim31230") == (EIM, "EIM31230")
    assert href_target("/hmrc-internal-manuals/business-income-manual/bim45000#section") == ("business-income-manual", "BIM45000")
    assert href_target("/guidance/employment-income-manual/EIM70199#EIM70745") == (EIM, "EIM70745")
    assert href_target("/guidance/employment-income-manual/EIM16140") == (EIM, "EIM16140")
    assert href_target("https://www.gov.uk/government/publications/p11d") is None
    assert href_target("#Top") is None


def test_text_targets_single_ids_ranges_and_other_manuals() -> None:
    assert text_targets("see EIM20007 and NIM05682.") == [(EIM, "EIM20007", None), ("national-insurance-manual", "NIM05682", None)]
    assert text_targets("EIM01234 to EIM01240 apply") == [(EIM, "EIM01234", "EIM01240")]
    assert text_targets("EIM31500 - EIM31599 cover") == [(EIM, "EIM31500", "EIM31599")]
    assert text_targets("at EP8312 to 8313 and SE15040") == []  # prefixes of no known manual
    assert text_targets("see CG64350 onwards") == [("capital-gains-manual", "CG64350", None)]
    assert text_targets("ITEPA 2003 section 401, UKUT238") == []


def _ref(start: str, end: str | None = None, manual: str = EIM, source: str = "EIM1") -> RawRef:
    return RawRef(source_section=source, paragraph_id=f"{source}#c0.p0", target_manual=manual, start=start, end=end, kind="text")


def test_ranges_resolve_to_the_sections_the_manual_has() -> None:
    known = ["EIM01230", "EIM01234", "EIM01235", "EIM01237A", "EIM01240", "EIM01241", "EIM1"]
    targets = [x.target_section for x in resolve([_ref("EIM01234", "EIM01240")], EIM, known)]
    assert targets == ["EIM01234", "EIM01235", "EIM01237A", "EIM01240"]
    # Another manual's range: its sections are unknown here, so its two ends.
    other = resolve([_ref("BIM10000", "BIM10090", manual="business-income-manual")], EIM, known)
    assert [x.target_section for x in other] == ["BIM10000", "BIM10090"]
    # A reversed range has nothing between: its ends.
    assert [x.target_section for x in resolve([_ref("EIM01240", "EIM01234")], EIM, known)] == ["EIM01240", "EIM01234"]
    # Self references and repeats in one paragraph are dropped.
    assert resolve([_ref("EIM1"), _ref("EIM01230"), _ref("EIM01230")], EIM, known)[0].target_section == "EIM01230"
    assert len(resolve([_ref("EIM1"), _ref("EIM01230"), _ref("EIM01230")], EIM, known)) == 1


def test_links_carry_their_paragraph_and_are_not_counted_twice_as_text(corpus_dir: Path) -> None:
    doc = json.loads((corpus_dir / EIM / "eim31240.json").read_text())
    build, _ = build_page(doc, "EIM31240", EIM, "Employment Income Manual", {}, None)
    refs = resolve(build.refs, EIM, ["EIM31240", "EIM31230", "EIM31330", "EIM31280"])
    assert [(r.target_section, r.paragraph_id, r.kind) for r in refs] == [
        ("EIM31230", "EIM31240#c0.p0", "link"),
        ("EIM31330", "EIM31240#c0.p0", "link"),
        ("EIM31280", "EIM31240#c2.p5", "link"),  # after "cars and vans*   motor cycles" became two items (the emptied 2002-03 table gone)
    ]


def test_graph_edges_xrefs_and_siblings(corpus_dir: Path) -> None:
    doc = json.loads((corpus_dir / EIM / "eim31240.json").read_text())
    build, _ = build_page(doc, "EIM31240", EIM, "Employment Income Manual", {}, None)
    xrefs = resolve(build.refs + [_ref("BIM45000", manual="business-income-manual", source="EIM31240")], EIM, ["EIM31240"])
    graph = build_graph(EIM, {"EIM31240": build.page}, {c.id: c for c in build.chunks}, xrefs)
    assert graph.edges["EIM31240", "EIM31230"]["paragraph_id"] == "EIM31240#c0.p0"
    assert graph.nodes["BIM45000"]["external"] is True
    assert graph.nodes["EIM31230"]["missing"] is True  # not in this (one-page) collection
    n = len(build.chunks)
    assert edge_counts(graph) == (4, n * (n - 1) // 2)
    assert graph.edges["EIM31240#c0", "EIM31240#c2"]["kind"] == "sibling"
    assert graph.has_edge("EIM31240#c2", "EIM31240#c0")


def test_sibling_edges_reach_four_positions_each_way() -> None:
    from datetime import UTC, datetime

    from shared.contracts.corpus import Chunk, Page

    ids = [f"SAM1#c{i}" for i in range(12)]
    page = Page(section_id="SAM1", manual="m", title="t", base_path="/p", public_updated_at=datetime.now(UTC), chunk_ids=ids)
    chunks = {c: Chunk(id=c, section_id="SAM1", manual="m", position=i, heading_path=[], paragraphs=[], content_hash="h") for i, c in enumerate(ids)}
    graph = build_graph("m", {"SAM1": page}, chunks, [])
    assert sorted(graph.successors("SAM1#c5"), key=ids.index) == ["SAM1#c1", "SAM1#c2", "SAM1#c3", "SAM1#c4", "SAM1#c6", "SAM1#c7", "SAM1#c8", "SAM1#c9"]
    assert sorted(graph.successors("SAM1#c0"), key=ids.index) == ["SAM1#c1", "SAM1#c2", "SAM1#c3", "SAM1#c4"]
    assert edge_counts(graph) == (0, sum(min(4, 11 - i) for i in range(12)))


@pytest.mark.slow
@pytest.mark.parametrize(("manual", "linked"), [("business-income-manual", 4427), ("self-assessment-manual", 1330)])
def test_other_manuals_parse_whole_with_their_link_counts(corpus_dir: Path, manual: str, linked: int) -> None:
    refs, sections, chunks = [], [], 0
    for path in sorted((corpus_dir / manual).glob("*.json")):
        if path.name == "_manual.json":
            continue
        doc = json.loads(path.read_text())
        section = doc["details"]["section_id"].upper()
        sections.append(section)
        build, _ = build_page(doc, section, manual, manual, {}, None)
        refs.extend(build.refs)
        chunks += len(build.chunks)
    pairs = {(x.source_section, x.target_section) for x in resolve(refs, manual, sections) if x.kind == "link"}
    assert abs(len(pairs) - linked) <= 0.02 * linked  # the corpus README's link counts
    assert chunks > len(sections)


@pytest.mark.slow
def test_whole_eim_has_about_6600_linked_page_to_page_references(corpus_dir: Path) -> None:
    refs, sections = [], []
    for path in sorted((corpus_dir / EIM).glob("eim*.json")):
        doc = json.loads(path.read_text())
        section = doc["details"]["section_id"].upper()
        sections.append(section)
        build, _ = build_page(doc, section, EIM, "Employment Income Manual", {}, None)
        refs.extend(build.refs)
    xrefs = resolve(refs, EIM, sections)
    linked = {(x.source_section, x.target_section) for x in xrefs if x.kind == "link"}
    assert 6400 <= len(linked) <= 6800  # the corpus README counts 6,604 links
    every = {(x.source_section, x.target_section) for x in xrefs}
    assert len(every) > len(linked)  # plain-text "see EIMnnnnn" adds pages the links do not
    assert all(source != target for source, target in every)
    assert {x.target_manual for x in xrefs} >= {EIM, "national-insurance-manual", "capital-gains-manual"}
    in_manual = {t for _, t in linked}
    # Nearly every link lands on a page (the 2014 copy lacks a few dozen linked pages).
    assert len(in_manual - set(sections)) < 0.05 * len(in_manual)

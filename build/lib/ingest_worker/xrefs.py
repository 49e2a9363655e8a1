"""Cross-references ("see EIM20007") and the graph the question pipeline expands along.

References come from ``<a href>`` links to ``hmrc-internal-manuals/<manual>/<section>`` (and
the 2014 scrape's ``/guidance/<manual>/<SECTION>#<SECTION>`` links), and from plain text:
single ids ("see NIM05682") and ranges ("EIM01234 to EIM01240"), in any HMRC manual whose
prefix we know. Each reference keeps the paragraph that makes it. Ranges are resolved against
the sections a manual actually has, at graph-building time, so a page added inside a range is
picked up without re-parsing the page that names the range.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Iterable

import networkx as nx

from ingest_worker.chunker import ChunkDraft
from ingest_worker.parser import Section
from shared.contracts.corpus import Chunk, CrossRef, Page, RawRef, paragraph_id

# Section-id prefixes of HMRC manuals (text references name a manual only by its prefix).
PREFIX_MANUALS = {
    "EIM": "employment-income-manual",
    "BIM": "business-income-manual",
    "SAM": "self-assessment-manual",
    "CG": "capital-gains-manual",
    "NIM": "national-insurance-manual",
    "CA": "capital-allowances-manual",
    "PIM": "property-income-manual",
    "INTM": "international-manual",
    "ERSM": "employment-related-securities",
    "CTM": "company-taxation-manual",
    "CFM": "corporate-finance-manual",
    "CIRD": "corporate-intangibles-research-and-development-manual",
    "PM": "partnership-manual",
    "PTM": "pensions-tax-manual",
    "EM": "enquiry-manual",
    "SACM": "self-assessment-claims-manual",
    "ESM": "employment-status-manual",
    "BLM": "business-leasing-manual",
    "SAIM": "savings-and-investment-manual",
    "ETASSUM": "employee-tax-advantaged-share-scheme-user-manual",
    "RDRM": "residence-domicile-and-remittance-basis",
    "CH": "compliance-handbook",
    "SALF": "self-assessment-legal-framework",
    "VCM": "venture-capital-schemes-manual",
    "TSEM": "trusts-settlements-and-estates-manual",
    "PAYE": "paye-manual",
    "IPTM": "insurance-policyholder-taxation-manual",
    "ARTG": "appeals-reviews-and-tribunals-guidance",
    "DMBM": "debt-management-and-banking",
    "CISR": "construction-industry-scheme-reform",
    "CSLM": "collection-of-student-loans-manual",
    "SVM": "shares-and-assets-valuation-manual",
    "GIM": "general-insurance-manual",
    "FPCM": "film-production-company-manual",
    "PSA": "paye-settlement-agreements",
    "OT": "oil-taxation-manual",
    "VIT": "vat-input-tax",
}
# A range with more known sections than this is kept as its two endpoints (not a fan of edges).
MAX_RANGE = 60
# Sibling edges join chunks up to this many positions apart on a page: every chunk of a
# typical page (EIM pages have a handful), a neighbourhood on the long ones (SAM has pages
# of a hundred chunks, where a clique would be thousands of edges).
SIBLING_WINDOW = 4

LINK_HREF = re.compile(r"hmrc-internal-manuals/(?P<manual>[a-z0-9-]+)/(?P<section>[A-Za-z0-9-]+)", re.I)
GUIDANCE_HREF = re.compile(
    r"^/guidance/(?P<manual>[a-z0-9-]+)/(?P<section>[A-Za-z0-9]+)(?:#(?P<anchor>[A-Za-z]{2,7}\d{3,6}[A-Za-z]?))?$"
)
SECTION_ID = r"(?P<{p}>[A-Z]{{2,7}})(?P<{n}>\d{{3,6}}[A-Za-z]?)"
TEXT_REF = re.compile(
    r"\b" + SECTION_ID.format(p="p1", n="n1") + r"\b"
    r"(?:\s*(?:to|-|\u2013|\u2014)\s*(?:(?P<p2>[A-Z]{2,7}))?(?P<n2>\d{3,6}[A-Za-z]?)\b)?"
)


def href_target(href: str) -> tuple[str, str] | None:
    """(manual, SECTION) of a link to a manual section, else None."""
    match = LINK_HREF.search(href)
    if match:
        return match.group("manual").lower(), match.group("section").upper()
    match = GUIDANCE_HREF.match(href)
    if match:
        return match.group("manual").lower(), (match.group("anchor") or match.group("section")).upper()
    return None


def text_targets(text: str) -> list[tuple[str, str, str | None]]:
    """(manual, start, end or None) for every id or id range of a known manual in ``text``."""
    found = []
    for match in TEXT_REF.finditer(text):
        prefix = match.group("p1")
        manual = PREFIX_MANUALS.get(prefix)
        if manual is None:
            continue
        start = (prefix + match.group("n1")).upper()
        end = None
        if match.group("n2") and match.group("p2") in (None, prefix):
            end = (prefix + match.group("n2")).upper()
        found.append((manual, start, end))
    return found


def extract_refs(section_id: str, chunks: list[Chunk], drafts: list[ChunkDraft], sections: list[Section]) -> list[RawRef]:
    """References made by one page, each tied to the paragraph that makes it."""
    refs: list[RawRef] = []
    for chunk, draft in zip(chunks, drafts, strict=True):
        blocks = sections[draft.section_index].blocks
        for index, b_index in enumerate(draft.block_indexes):
            block = blocks[b_index]
            pid = paragraph_id(chunk.id, index)
            linked: set[tuple[str, str]] = set()
            for href in block.hrefs:
                target = href_target(href)
                if target and target not in linked:
                    linked.add(target)
                    refs.append(RawRef(source_section=section_id, paragraph_id=pid, target_manual=target[0], start=target[1], kind="link"))
            for manual, start, end in text_targets(block.text):
                if end is None and (manual, start) in linked:
                    continue  # the link's own text ("see EIM20007")
                refs.append(RawRef(source_section=section_id, paragraph_id=pid, target_manual=manual, start=start, end=end, kind="text"))
    return refs


def _sort_key(section: str) -> tuple[str, int, str]:
    match = re.fullmatch(r"([A-Z]+)(\d+)([A-Z]*)", section)
    if not match:
        return section, -1, ""
    return match.group(1), int(match.group(2)), match.group(3)


class SectionIndex:
    """The sections a manual has, sorted, to resolve ranges."""

    def __init__(self, sections: Iterable[str]):
        self.keys = sorted(_sort_key(s) for s in sections)
        self.by_key = {_sort_key(s): s for s in sections}

    def between(self, start: str, end: str) -> list[str]:
        lo, hi = _sort_key(start), _sort_key(end)
        if lo[1] < 0 or hi[1] < 0 or lo[0] != hi[0] or hi < lo:
            return []
        hi = (hi[0], hi[1], hi[2] or "~")  # "EIM31599" includes EIM31599A
        left, right = bisect.bisect_left(self.keys, lo), bisect.bisect_right(self.keys, hi)
        return [self.by_key[k] for k in self.keys[left:right]]


def resolve(refs: list[RawRef], manual: str, own_sections: Iterable[str]) -> list[CrossRef]:
    """One CrossRef per (linking paragraph, target section); ranges in this manual expand to
    the sections it has; self-references are dropped."""
    index = SectionIndex(own_sections)
    seen: set[tuple[str, str]] = set()
    resolved: list[CrossRef] = []
    for ref in refs:
        targets = [ref.start]
        if ref.end is not None:
            inside = index.between(ref.start, ref.end) if ref.target_manual == manual else []
            targets = inside if 0 < len(inside) <= MAX_RANGE else [ref.start, ref.end]
        for target in targets:
            key = (ref.paragraph_id, target)
            if target == ref.source_section or key in seen:
                continue
            seen.add(key)
            resolved.append(
                CrossRef(
                    source_section=ref.source_section,
                    target_section=target,
                    target_manual=ref.target_manual,
                    paragraph_id=ref.paragraph_id,
                    kind=ref.kind,
                )
            )
    return resolved


def build_graph(manual: str, pages: dict[str, Page], chunks: dict[str, Chunk], xrefs: list[CrossRef]) -> nx.DiGraph:
    """Page nodes (other manuals' pages marked external), chunk nodes, page->page ``xref``
    edges (with every linking paragraph) and chunk<->chunk ``sibling`` edges within a page
    (both directions, up to ``SIBLING_WINDOW`` positions apart)."""
    graph = nx.DiGraph(manual=manual)
    for section, page in pages.items():
        graph.add_node(section, kind="page", manual=manual, external=False)
    for cid, chunk in chunks.items():
        graph.add_node(cid, kind="chunk", section=chunk.section_id)
    linking: dict[tuple[str, str], list[CrossRef]] = defaultdict(list)
    for ref in xrefs:
        linking[(ref.source_section, ref.target_section)].append(ref)
    for (source, target), refs in linking.items():
        if target not in graph:  # another manual's page, or a broken link inside this one
            external = refs[0].target_manual != manual
            graph.add_node(target, kind="page", manual=refs[0].target_manual, external=external, missing=not external)
        graph.add_edge(
            source,
            target,
            kind="xref",
            paragraph_id=refs[0].paragraph_id,
            paragraph_ids=[r.paragraph_id for r in refs],
            ref_kinds=sorted({r.kind for r in refs}),
        )
    for page in pages.values():
        ids = page.chunk_ids
        for i, a in enumerate(ids):
            for b in ids[i + 1 : i + 1 + SIBLING_WINDOW]:
                graph.add_edge(a, b, kind="sibling")
                graph.add_edge(b, a, kind="sibling")
    return graph


def edge_counts(graph: nx.DiGraph) -> tuple[int, int]:
    """(page->page xref edges, unordered chunk sibling pairs)."""
    xref = sibling = 0
    for _, _, kind in graph.edges(data="kind"):
        if kind == "xref":
            xref += 1
        elif kind == "sibling":
            sibling += 1
    return xref, sibling // 2

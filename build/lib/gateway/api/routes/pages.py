"""A manual page as the index holds it: what a citation opens."""

from __future__ import annotations

from datetime import datetime

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel

from gateway.deps import ManualQuery, SettingsDep, open_index
from gateway.errors import ApiError, documented
from shared.contracts.corpus import Chunk

router = APIRouter(prefix="/v1", tags=["pages"])


class PageView(BaseModel):
    section_id: str
    manual: str
    title: str
    url: str  # the page on gov.uk
    public_updated_at: datetime
    breadcrumbs: list[str]
    chunks: list[Chunk]  # in page order, each with its heading path and paragraphs (ids citations use)


@router.get("/pages/{section_id}", response_model=PageView, responses=documented(404, 422, 503), summary="One page's chunks and paragraphs")
def get_page(
    settings: SettingsDep,
    section_id: Annotated[str, Path(max_length=64, examples=["EIM31240"])],
    manual: ManualQuery = None,  # type: ignore[assignment]
) -> PageView:
    index = open_index(settings, manual)
    page = index.pages.get(section_id) or index.pages.get(section_id.upper())
    if page is None:
        raise ApiError(404, "not_found", f"No page {section_id} in {index.manual}.")
    return PageView(
        section_id=page.section_id,
        manual=page.manual,
        title=page.title,
        url=page.url,
        public_updated_at=page.public_updated_at,
        breadcrumbs=page.breadcrumbs,
        chunks=index.page_chunks(page.section_id),
    )

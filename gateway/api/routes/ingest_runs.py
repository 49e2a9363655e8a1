"""The ingest run log (ingest_worker/runs.py): what each scheduled or manual re-ingest did."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from gateway.deps import SettingsDep
from gateway.errors import documented
from ingest_worker.runs import IngestRun, RunStatus, read_runs

router = APIRouter(prefix="/v1/ingest", tags=["ingest"])


class IngestRunsView(BaseModel):
    runs: list[IngestRun]  # newest first


@router.get(
    "/runs",
    response_model=IngestRunsView,
    responses=documented(422),
    summary="Recent ingest runs: pages changed and removed, time taken, pages whose dates moved",
)
def list_ingest_runs(
    settings: SettingsDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="at most this many runs")] = 50,
    manual: Annotated[str | None, Query(max_length=100, examples=["employment-income-manual"])] = None,
    status: Annotated[RunStatus | None, Query(description="only runs that ended so")] = None,
) -> IngestRunsView:
    return IngestRunsView(runs=read_runs(settings.data_dir, limit=limit, manual=manual, status=status))

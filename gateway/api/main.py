"""The gateway's routes, listed by hand: a new route module is added here."""

from __future__ import annotations

from fastapi import APIRouter

from gateway.api.routes import conversations, health, ingest_runs, pages, questions

api_router = APIRouter()
for module in (conversations, health, ingest_runs, pages, questions):
    api_router.include_router(module.router)

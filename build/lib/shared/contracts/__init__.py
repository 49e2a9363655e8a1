"""Pydantic messages between stages and services.

corpus.py: what ingest produces and the question pipeline reads (pages, chunks, paragraphs,
cross-references). pipeline.py: the messages between question stages. api.py: the result
a client sees. events.py: what a question's stages report to the question store.
ingest_runs.py: the ingest run log the ingest worker writes and the gateway serves.
"""

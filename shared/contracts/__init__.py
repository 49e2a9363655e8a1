"""Pydantic messages between stages and services.

corpus.py: what ingest produces and the question pipeline reads (pages, chunks, paragraphs,
cross-references). pipeline.py: the messages between question stages. api.py: the result
a client sees.
"""

"""The evaluation harness: runs an eval set through the real pipeline, scores it claim by
claim, compares named settings variants and a Haystack peer, and writes the report.

scoring.py: pure functions (question file, strict correctness, lead facts, claim precision, verdicts, recall, key facts, groundedness).
harness.py: asks the questions (the gateway's embedded path, services.runtime.dispatch.answer) per variant.
sweep.py:   `--sweep`: one question per page from its title.
peer.py:    Haystack's standard hybrid retrieval over the same chunks and embeddings.
report.py:  report.json, report.md and the recall-by-stage chart.
cli.py:     `taxnav eval`.
"""

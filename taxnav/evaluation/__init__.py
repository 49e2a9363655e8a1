"""The evaluation harness: runs an eval set through the real pipeline, scores it claim by
claim, compares named settings variants and a Haystack peer, and writes the report.

scoring.py: one question scored (strict correctness, lead facts, verdicts, recall; its docstring defines every measure),
            from questions.py (the eval files), matching.py (key facts, groundedness, claims that read alone),
            outcomes.py (what scoring gives); metrics.py: the scores over many questions.
harness.py: asks the questions (the gateway's embedded path, services.runtime.dispatch.answer) per variant.
sweep.py:   `--sweep`: one question per page from its title.
peer.py:    Haystack's standard hybrid retrieval over the same chunks and embeddings.
report.py:  report.json, report.md and the recall-by-stage chart.
cli.py:     `taxnav eval`.
"""

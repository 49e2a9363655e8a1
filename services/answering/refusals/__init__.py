"""Refusals: what each category means, the evidence the stages find for them, and the one
place that decides whether a finding refuses (``decide``).

A stage says what it found (a typed finding on the state, shared/contracts/refusals.py,
``Findings``); ``decide.refusal`` reads the findings in STAGES order and builds the first
refusal they call for, with its message and evidence. ``decide`` is the only module of
services/ that builds a ``Refusal``; the others here only compute evidence:

- ``asking``: whether a question asks for today's figure;
- ``coverage``: low_coverage's evidence, the question's subjects the manual lacks (a scheme
  named by an acronym, a rule named by its amount) and a rule dated after the manual;
- ``stale``: the manual covers the rule, but the question asks for a year or figure later than
  the answering pages' last update; the evidence carries the latest figures the manual has;
- ``conflict``: the answer's pages give different values for the asked quantity under
  conditions the question does not settle; the evidence lists the options.

(``malformed`` and ``out_of_scope`` are found by the scope guard, services/answering/scope.py,
before retrieval, and by retrieval's comparison of the ingested manuals.)
"""

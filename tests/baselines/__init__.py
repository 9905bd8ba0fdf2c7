"""OpenAI Baselines' own tests, ported to rlbase (one file per original; see each docstring).

The learning checks are marked ``slow`` (Baselines' ``mark_slow``): run them with
``python -m pytest tests/baselines --runslow``.
"""

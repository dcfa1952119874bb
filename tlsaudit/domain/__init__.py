"""Pure rules: grading, findings, recommendations, statistics, diffs.

Nothing in this package may import Django, sockets, sslyze or any other module of ours
outside `tlsaudit.domain` (tests/test_layering.py checks it).
"""

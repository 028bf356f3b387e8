"""Flows: orchestration only (load, fan out, gather, aggregate, report) and the command line."""

"""Figures: pure functions and models, no Prefect, no I/O (the layering test holds them to it)."""

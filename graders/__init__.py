"""Graders: pure functions from (sample, output) to grades. No I/O except what a check must do."""

"""Deployments: scheduled benchmarks, one source of truth."""

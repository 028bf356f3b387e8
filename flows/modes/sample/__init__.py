"""Sample mode: a samples file, artifact variants, one model call per sample x variant x run, graded
by assertions and an LLM judge."""

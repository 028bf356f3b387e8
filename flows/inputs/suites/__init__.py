"""Suites other tools publish, converted into a mode's plan: oh-my-knowledge projects (omk.py, into
sample mode's variants and samples), skill-creator evals (skill_creator.py) and Claude Code plugin
eval suites (plugin_eval.py, both into agentic tasks)."""

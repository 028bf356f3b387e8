"""Agentic mode: a skill's tasks run by an agent CLI in isolated sandboxes, with and without the
skill (one agent, or several side by side: matrix.py), checked, judged and compared per task."""

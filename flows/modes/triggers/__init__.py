"""Trigger mode: real agent sessions with skills listed, never forced; does the skill fire when it
should, stay away when it should not, and win over its neighbours."""

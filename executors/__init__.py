"""Executors: the only code that talks to models or agents.

One module per provider behind the registry in ``executors.registry``. Each provider maps its
failures once, at its boundary, onto the error tree in ``executors.errors``.
"""

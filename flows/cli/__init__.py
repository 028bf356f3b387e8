"""The command line: one module per family of commands, and flags generated from the options models."""

"""The modes, one folder each (sample/, agentic/, triggers/), and their registry (registry.py, one line
per mode). A mode's folder holds its descriptor (mode.py, its ``MODE``), its report class (model.py),
its command (cli.py), its plan, its flow (flow.py), what it runs beside the shared engine, and its
report part (report.py). A mode never imports another mode; the shared layers (cli, report, engine,
inputs) never import a mode: they loop over the registry (flows/report/modes.py loads it). Modules
directly in this folder serve every mode (explain.py: the diagnosis after a run)."""

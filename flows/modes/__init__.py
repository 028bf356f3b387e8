"""The modes, one folder each (sample/, agentic/, triggers/): a mode's command (cli.py), its plan,
its flow (flow.py), what it runs beside the shared engine, and its report part (report.py). A mode
never imports another mode; the shared layers (cli's run protocol, report, engine, inputs) never
import a mode. Modules directly in this folder serve every mode (explain.py: the diagnosis after a
run)."""

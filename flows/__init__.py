"""Flows: orchestration (load, fan out, gather, aggregate, report) and the command line.

The flow bodies sit here at the top, one module each: ``sample_bench`` (sample mode),
``skill_bench`` (agentic mode), ``nightly`` (a scheduled suite) and ``shard`` (one shard of a
scaled-out run). What they are made of lives in four subpackages, each importing only those after
it (``tests/test_layering.py`` checks):

    cli -> flow bodies -> report, engine -> inputs

- ``cli``: the commands (``python -m flows.bench`` is ``flows.cli.main``), flags generated from the
  options models, Prefect's environment.
- ``report``: the typed report (``schema``), its builders (``build``, ``agentic``), the console,
  markdown, CI outputs, regression, the reports folder (``store``) and the report server.
- ``engine``: the unit runner, judging, agentic sessions after they ran, task generation, progress
  and the collector settings while units run.
- ``inputs``: options, the user's files, samples and variants, agentic config and tasks, the plan
  of units and sessions, and ``prepare`` (everything validated before any call).
"""

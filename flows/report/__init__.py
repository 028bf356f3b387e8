"""The report: typed models (``schema``), builders for every mode, and every reader of a report
(console, markdown, CI outputs, regression, the reports folder and the local report server)."""

"""Exit codes: 0 done (ci: every gate passed), 1 a gate failed or no verdict, 2 bad input."""

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

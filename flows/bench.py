"""`python -m flows.bench`: the command line (the commands live in flows/cli/)."""

from flows.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())

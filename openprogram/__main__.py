"""`python -m openprogram`: the `openprogram` command (cli.py), for when the script is not
on PATH (a client starting `python -m openprogram mcp serve ...`, say)."""

from openprogram.cli import main

main()

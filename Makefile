# The README's two commands are `make demo` and `make test`; the rest are for developers.
.PHONY: demo test setup setup-dev lint format typecheck bench

demo:
	@scripts/setup.sh
	.venv/bin/openprogram demo

test:
	@scripts/setup.sh --dev
	scripts/test.sh

setup:
	scripts/setup.sh

setup-dev:
	scripts/setup.sh --dev

lint:
	.venv/bin/ruff check openprogram gui_harness tests examples benchmarks
	.venv/bin/ruff format --check openprogram gui_harness tests examples benchmarks
	.venv/bin/lint-imports
	.venv/bin/python scripts/check_any_seams.py
	.venv/bin/python scripts/check_private_imports.py

format:
	.venv/bin/ruff format openprogram gui_harness tests examples benchmarks
	.venv/bin/ruff check --fix openprogram gui_harness tests examples benchmarks

typecheck:
	.venv/bin/mypy

bench:
	.venv/bin/python benchmarks/run.py

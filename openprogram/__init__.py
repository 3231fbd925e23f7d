"""openprogram: agents as ordinary decorated functions."""

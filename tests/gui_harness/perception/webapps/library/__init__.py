"""A small library catalogue (authors, books) for the Django admin web app."""

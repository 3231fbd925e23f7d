"""The catalogue's models: authors and their books."""

from __future__ import annotations

from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=100)
    email = models.EmailField(blank=True)
    born = models.DateField(null=True, blank=True)

    class Meta:
        app_label = "library"

    def __str__(self) -> str:
        return self.name


class Book(models.Model):
    GENRES = (("fiction", "Fiction"), ("history", "History"), ("science", "Science"))
    title = models.CharField(max_length=200)
    author = models.ForeignKey(Author, on_delete=models.CASCADE)
    genre = models.CharField(max_length=20, choices=GENRES, default="fiction")
    published = models.DateField(null=True, blank=True)
    in_print = models.BooleanField(default=True)
    pages = models.PositiveIntegerField(default=100)
    summary = models.TextField(blank=True)

    class Meta:
        app_label = "library"

    def __str__(self) -> str:
        return self.title

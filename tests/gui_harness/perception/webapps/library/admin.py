"""The catalogue in Django's admin: a change list with filters, search and actions, a
change form, and books inline on their author."""

from __future__ import annotations

from django.contrib import admin

from .models import Author, Book


class BookInline(admin.TabularInline):
    model = Book
    extra = 1
    fields = ("title", "genre", "published", "in_print")


@admin.register(Author)
class AuthorAdmin(admin.ModelAdmin):
    list_display = ("name", "email", "born")
    search_fields = ("name",)
    inlines = (BookInline,)


@admin.register(Book)
class BookAdmin(admin.ModelAdmin):
    list_display = ("title", "author", "genre", "published", "in_print")
    list_filter = ("genre", "in_print", "published")
    search_fields = ("title", "author__name")
    date_hierarchy = "published"
    list_editable = ("in_print",)

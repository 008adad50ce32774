"""The scope panel's fields ("from chapter", "to chapter", "I have read up to") are parsed, checked
and described by ``rag.scope``, the one module of scopes; the names the pages import from here."""

from __future__ import annotations

from rag.scope import FIELDS, Scope, ScopeInvalid, chapter_field, parse_scope, scope_summary

__all__ = ["FIELDS", "Scope", "ScopeInvalid", "chapter_field", "parse_scope", "scope_summary"]

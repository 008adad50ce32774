"""Helpers for the book index tests (tests/test_index_*.py)."""

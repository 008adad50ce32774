"""Helpers shared by the UI tests (tests/test_ui_*.py, tests/test_browser_ui.py)."""

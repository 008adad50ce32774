"""Test doubles that speak the real protocols on loopback (used by tests and by ``rag eval --replay``)."""

"""Fixtures of the API tests."""

from __future__ import annotations



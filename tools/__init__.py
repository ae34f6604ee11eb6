"""Maintainer scripts (lock, execution count, parameter extremes), importable by the tests."""

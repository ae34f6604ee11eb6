"""Lesson 00: how the course runs and checks itself."""

"""Lesson 08: a dependency-stack upgrade as data (verl #7604)."""

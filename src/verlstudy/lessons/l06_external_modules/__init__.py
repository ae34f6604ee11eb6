"""Lesson 06: external modules loaded by an environment variable (verl #7827, #7886)."""

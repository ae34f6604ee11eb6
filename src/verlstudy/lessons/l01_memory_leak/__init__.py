"""Lesson 01: attributing a per-micro-batch memory leak (verl #7874)."""

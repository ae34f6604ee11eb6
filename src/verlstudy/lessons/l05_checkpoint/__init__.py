"""Lesson 05: strict=False checkpoint saving, audited (verl #7836)."""

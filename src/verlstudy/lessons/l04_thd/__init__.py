"""Lesson 04: aligning packed THD sequence lengths for SP and CP (verl #7702)."""

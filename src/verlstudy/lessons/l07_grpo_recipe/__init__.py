"""Lesson 07: a 512-device GRPO recipe read closely (verl #7788)."""

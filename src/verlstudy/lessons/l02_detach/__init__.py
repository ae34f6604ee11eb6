"""Lesson 02: detach_tree and the detach-placement trap (verl #7874, #6699)."""

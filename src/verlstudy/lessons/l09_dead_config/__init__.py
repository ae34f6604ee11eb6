"""Lesson 09: removing a dead config key (verl #7544, #7466)."""

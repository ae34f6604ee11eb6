"""Lesson 03: router replay made model-scoped and opt-in (verl #7805, #7106, #7786)."""

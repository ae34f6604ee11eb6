"""Lesson 05: strict=False in the HF weight export (verl #7836): the export, audited, and the load side."""

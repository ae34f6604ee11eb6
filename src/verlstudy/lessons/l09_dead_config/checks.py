"""Lesson 09's exercise checkers: 9.1 writes attribute_reads (the heart of the dead-field search; its checker,
reference and contract are in `check_attribute_reads`), 9.2 writes yaml_only_keys (the check that catches a
half-done removal before a job starts; in `check_yaml_keys`). Importing this module registers both.

A notebook reaches them only as check_exercise("9.N", answer). The library's own search
(`read_index.attribute_read` and the read index behind `dead_fields`) is refused as an answer to 9.1,
and `schema.yaml_field_mismatches` (or `schema.nested_dataclass`) as an answer to 9.2, also when wrapped in a
learner's function.
A wrong answer's message names the mistake it shows; how to get there is each checker's `method`,
shown after repeated tries or by `exercise_hint`.
"""

from __future__ import annotations

from verlstudy.lessons.l09_dead_config.check_attribute_reads import check_attribute_reads
from verlstudy.lessons.l09_dead_config.check_yaml_keys import check_yaml_only_keys

__all__ = ["check_attribute_reads", "check_yaml_only_keys"]  # importing this module registers both checkers

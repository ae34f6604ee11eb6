"""A miniature engine config package for lesson 09 (verl PR #7544): config dataclasses + an engine.

Written for verlstudy in the shape of verl 0.9.0 before the fix; no upstream code is copied.
"""

from engine_config import config, engine

__all__ = ["config", "engine"]

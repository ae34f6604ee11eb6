"""Lesson 03: router replay made model-scoped and opt-in (verl #7805, #7106, #7786).

Modules: `moe` (one router's replay state, the toy MoE), `routes` (collected from the forwarded model,
stacked by layer number), `controller` (the opt-in lifecycle and the reverted one), `pipeline`
(`pp_gather` and its uint8 wire format), `text_config` (the text-branch config walk), `upstream`
(the comparison with verl); `checks` holds the exercise checkers.
"""

"""Lesson 03: router replay made model-scoped and opt-in (verl #7805, #7106, #7786).

Modules: `moe` (one router's replay state, the toy MoE), `routes` (collected from the forwarded model's
decoder, stacked by layer number, replayed by absolute layer), `controller` (the opt-in lifecycle and
a positional, ungated one of verl 0.8.0's shape, before #7340), `pipeline` (`pp_gather`'s
dense branch and its uint8 wire format), `setup` (the notebook's parameters, validated),
`text_config` (the text-branch config walk), `guards` (the guard tests as predicates, run on the bug
and on the fix), `upstream` (verl's own functions on the toy model, and the comparisons); `checks`
holds the exercise checkers.
"""

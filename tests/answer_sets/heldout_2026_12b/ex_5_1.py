"""Exercise 5.1: matches_module(key, pattern), True when key is the module pattern names or lies inside it."""

import fnmatch
import re

# The text: "mtp" matches "mtp.proj.weight" but not "mtp_norm.weight"; "model.layers.7" does not match
# "model.layers.78.eh_proj.weight"; the pattern with or without a trailing dot; a dot is a dot; return a bool.

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_plain_prefix(key, pattern):
    # a plain string prefix: "mtp" covers "mtp_norm", "model.layers.7" covers layer 78
    return key.startswith(pattern.rstrip("."))


def w_regex_match(key, pattern):
    # the pattern as a regex: a dot matches any character, and a prefix is enough
    return re.match(pattern, key) is not None


def w_substring(key, pattern):
    # anywhere in the key: "blocks.mtp.weight" matches "mtp"
    return pattern.rstrip(".") in key


def w_match_object(key, pattern):
    # returns the match object (or None), not a bool
    return re.match(re.escape(pattern.rstrip(".")) + r"(\.|$)", key)


def w_int(key, pattern):
    # returns 1/0, not True/False
    module = pattern.rstrip(".")
    return int(key == module or key.startswith(module + "."))


def w_case_insensitive(key, pattern):
    # lower-cases both: "layernorm" matches "LayerNorm"
    module = pattern.rstrip(".").lower()
    k = key.lower()
    return k == module or k.startswith(module + ".")


def w_first_piece(key, pattern):
    # compares the first dotted piece only: a multi-piece pattern like "model.layers.78" never matches
    return key.split(".")[0] == pattern.rstrip(".")


def w_no_equality(key, pattern):
    # forgets that the key may be the module name itself
    return key.startswith(pattern.rstrip(".") + ".")


def w_fnmatch(key, pattern):
    # shell glob: "mtp*" covers "mtp_norm"
    return fnmatch.fnmatchcase(key, pattern.rstrip(".") + "*")


def w_dot_appended_always(key, pattern):
    # appends a dot even when the pattern has one: "mtp." becomes "mtp..", which never matches
    return key == pattern or key.startswith(pattern + ".")


def w_any_piece(key, pattern):
    # the module name as any piece of the key: nested "blocks.mtp.weight" matches "mtp"
    return pattern.rstrip(".") in key.split(".")


def w_pattern_as_is(key, pattern):
    # startswith the pattern as given: "mtp." works, but "mtp" covers "mtp_norm"
    return key == pattern or key.startswith(pattern)


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_split_pieces(key, pattern):
    # compares dotted pieces: the key's first pieces equal the module's pieces
    module = pattern[:-1] if pattern.endswith(".") else pattern
    want = module.split(".")
    return key.split(".")[: len(want)] == want


def r_partition(key, pattern):
    # removesuffix, then what follows the module in the key must be nothing or a dot
    module = pattern.removesuffix(".")
    if not key.startswith(module):
        return False
    rest = key[len(module) :]
    return rest == "" or rest[0] == "."


def r_fullmatch(key, pattern):
    # an escaped regex anchored at both ends
    module = re.escape(pattern.removesuffix("."))
    return bool(re.fullmatch(module + r"(?:\..*)?", key, flags=re.DOTALL))


WRONG = {
    "plain string prefix": (w_plain_prefix,),
    "pattern as a regex": (w_regex_match,),
    "substring": (w_substring,),
    "match object": (w_match_object,),
    "1/0": (w_int,),
    "case-insensitive": (w_case_insensitive,),
    "first piece only": (w_first_piece,),
    "no equality case": (w_no_equality,),
    "fnmatch glob": (w_fnmatch,),
    "dot appended to a dotted pattern": (w_dot_appended_always,),
    "any piece": (w_any_piece,),
    "pattern used as is": (w_pattern_as_is,),
}

RIGHT = {
    "dotted pieces": (r_split_pieces,),
    "removesuffix and rest": (r_partition,),
    "anchored escaped regex": (r_fullmatch,),
}

UNSURE = {}

"""Exercise 5.1: matches_module(key, pattern), held-out answers."""

import re


# WRONG ---------------------------------------------------------------
def w_startswith(key, pattern):
    # a plain prefix: "mtp" covers "mtp_norm.weight", "model.layers.7" covers layer 78
    return key.startswith(pattern)


def w_strip_all_dots(key, pattern):
    # strips every dot at both ends: ".mtp" or "mtp.." are not the same pattern
    module = pattern.strip(".")
    return key == module or key.startswith(module + ".")


def w_no_exact(key, pattern):
    # forgets that the key may be the module name itself
    return key.startswith(pattern.rstrip(".") + ".")


def w_regex_unescaped(key, pattern):
    # uses the pattern as a regex: its dots match any character
    module = pattern.rstrip(".")
    return re.match(module + r"(\.|$)", key) is not None


def w_match_object(key, pattern):
    # returns the match object, not a bool
    return re.match(re.escape(pattern.rstrip(".")) + r"(?:\.|$)", key)


def w_anywhere(key, pattern):
    # matches the module anywhere in the key: "blocks.mtp.weight" is not inside "mtp"
    module = pattern.rstrip(".")
    return key == module or key.startswith(module + ".") or ("." + module + ".") in key


def w_case_insensitive(key, pattern):
    # compares lower-cased names: names are case-sensitive
    module = pattern.rstrip(".").lower()
    k = key.lower()
    return k == module or k.startswith(module + ".")


def w_int(key, pattern):
    # returns 1/0
    module = pattern.rstrip(".")
    return int(key == module or key.startswith(module + "."))


def w_split_first_piece(key, pattern):
    # compares only the first piece: "model.layers.7" matches any "model.*" key
    return key.split(".")[0] == pattern.rstrip(".").split(".")[0]


def w_trailing_dot_only(key, pattern):
    # a pattern without its dot is taken as a plain prefix
    if pattern.endswith("."):
        return key.startswith(pattern) or key == pattern[:-1]
    return key.startswith(pattern)


# RIGHT ---------------------------------------------------------------
def r_split_pieces(key, pattern):
    module = pattern[:-1] if pattern.endswith(".") else pattern
    want = module.split(".")
    return key.split(".")[: len(want)] == want


def r_regex_escaped(key, pattern):
    module = pattern.removesuffix(".")
    return bool(re.fullmatch(re.escape(module) + r"(?:\..*)?", key, flags=re.DOTALL))


def r_partition(key, pattern):
    module = pattern.removesuffix(".")
    if not key.startswith(module):
        return False
    rest = key[len(module) :]
    return rest == "" or rest[0] == "."


def w_rstrip_then_in(key, pattern):
    # tests the module name as a substring of the key's pieces list text ("layers.7" in "model.layers.78")
    return pattern.rstrip(".") in key


WRONG = {
    "substring test": (w_rstrip_then_in,),
    "plain startswith": (w_startswith,),
    "module name itself not matched": (w_no_exact,),
    "unescaped regex": (w_regex_unescaped,),
    "match object returned": (w_match_object,),
    "module anywhere in the key": (w_anywhere,),
    "case-insensitive": (w_case_insensitive,),
    "1/0": (w_int,),
    "first piece only": (w_split_first_piece,),
    "dotless pattern is a prefix": (w_trailing_dot_only,),
}
RIGHT = {
    "compare leading pieces": (r_split_pieces,),
    "escaped fullmatch": (r_regex_escaped,),
    "startswith then the next char": (r_partition,),
}
# wrong by the text (a leading dot is kept), but the domain's patterns may never start with a dot
UNSURE = {"strips dots at both ends": (w_strip_all_dots,)}

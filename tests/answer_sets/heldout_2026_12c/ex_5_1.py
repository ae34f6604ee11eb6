"""Exercise 5.1 answers: matches_module(key, pattern) -> bool."""

import re


# --- wrong ---
def w_startswith(key, pattern):
    # plain prefix: "mtp" matches "mtp_norm.weight", "model.layers.7" matches "model.layers.78..."
    return key.startswith(pattern)


def w_keeps_trailing_dot(key, pattern):
    # keeps the pattern's dot: "mtp." never matches the key "mtp" itself
    return key == pattern or key.startswith(pattern if pattern.endswith(".") else pattern + ".")


def w_in(key, pattern):
    # substring anywhere: a nested "blocks.mtp.weight" matches "mtp"
    module = pattern.rstrip(".")
    return key == module or (module + ".") in key


def w_regex_unescaped(key, pattern):
    # the pattern as a regex: its dots match any character
    module = pattern.rstrip(".")
    return re.match(module + r"(\.|$)", key) is not None


def w_case_insensitive(key, pattern):
    # lower-cases both: names are case-sensitive
    module = pattern.rstrip(".").lower()
    k = key.lower()
    return k == module or k.startswith(module + ".")


def w_returns_int(key, pattern):
    # returns 1/0: the exercise asks for a bool
    module = pattern.rstrip(".")
    return int(key == module or key.startswith(module + "."))


def w_returns_match(key, pattern):
    # returns a match object or None, not a bool
    return re.match(re.escape(pattern.rstrip(".")) + r"(?:\.|$)", key)


def w_strips_all_dots(key, pattern):
    # strips every trailing dot and leading ones too: "..mtp" or ".mtp" match as "mtp"
    module = pattern.strip(".")
    return key == module or key.startswith(module + ".")


def w_first_piece_only(key, pattern):
    # compares only the first dotted piece: "model.layers.7" matches every "model.*"
    return key.split(".")[0] == pattern.rstrip(".").split(".")[0]


def w_no_equality(key, pattern):
    # forgets the key that is the module name itself (a parameter named like the module, e.g. "mtp_norm")
    module = pattern.rstrip(".")
    return key.startswith(module + ".")


def w_endswith(key, pattern):
    # matches at the key's end, not its start
    module = pattern.rstrip(".")
    return key == module or key.endswith("." + module) or key.startswith(module + ".")


# --- right ---
def r_split_pieces(key, pattern):
    module = pattern[:-1] if pattern.endswith(".") else pattern
    want = module.split(".")
    return key.split(".")[: len(want)] == want


def r_escaped_fullmatch(key, pattern):
    module = pattern.removesuffix(".")
    return bool(re.fullmatch(re.escape(module) + r"(\..*)?", key, flags=re.DOTALL))


def r_partition(key, pattern):
    module = pattern.removesuffix(".")
    if not key.startswith(module):
        return False
    rest = key[len(module) :]
    return rest == "" or rest[0] == "."


# --- unsure ---
def u_strip_all_trailing_dots(key, pattern):
    # rstrip(".") removes every trailing dot; the text says one trailing dot. Patterns with two trailing dots
    # are not in the domain the notebook names, so the difference may never be tried
    module = pattern.rstrip(".")
    return key == module or key.startswith(module + ".")


WRONG = {
    "startswith": (w_startswith,),
    "trailing dot kept": (w_keeps_trailing_dot,),
    "substring anywhere": (w_in,),
    "regex unescaped": (w_regex_unescaped,),
    "case-insensitive": (w_case_insensitive,),
    "int": (w_returns_int,),
    "match object": (w_returns_match,),
    "first piece only": (w_first_piece_only,),
    "no equality case": (w_no_equality,),
    "suffix matches": (w_endswith,),
}
RIGHT = {
    "split into pieces": (r_split_pieces,),
    "escaped fullmatch": (r_escaped_fullmatch,),
    "prefix then next char": (r_partition,),
}
UNSURE = {
    "rstrip every trailing dot": (u_strip_all_trailing_dots,),
    # moved here after the one measurement: it differs from a right answer only on a pattern with a leading dot,
    # which the contract's domain (module names, with or without their trailing dot) does not hold
    "strips leading dots too": (w_strips_all_dots,),
}

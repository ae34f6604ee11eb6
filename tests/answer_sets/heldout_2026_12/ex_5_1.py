"""5.1 matches_module(key, pattern): key is the module pattern names, or lies inside it."""
import re


def _module(pattern):
    return pattern[:-1] if pattern.endswith(".") else pattern


# ---------------- wrong
def w_plain_startswith(key, pattern):
    return key.startswith(pattern)


def w_startswith_with_dot_only(key, pattern):
    return key.startswith(pattern + ".")


def w_unescaped_regex(key, pattern):
    return re.match(_module(pattern) + r"(\.|$)", key) is not None


def w_returns_match_object(key, pattern):
    return re.match(re.escape(_module(pattern)) + r"(\.|$)", key)


def w_anywhere_in_key(key, pattern):
    return f".{_module(pattern)}." in f".{key}."


def w_case_insensitive(key, pattern):
    m = _module(pattern).lower()
    k = key.lower()
    return k == m or k.startswith(m + ".")


def w_first_piece_only(key, pattern):
    return key.split(".")[0] == _module(pattern).split(".")[0]


def w_forgets_equal(key, pattern):
    return key.startswith(_module(pattern) + ".")


def w_returns_int(key, pattern):
    m = _module(pattern)
    return int(key == m or key.startswith(m + "."))


def w_rstrip_then_startswith(key, pattern):
    return key.startswith(pattern.rstrip("."))


# ---------------- right
def r_split_pieces(key, pattern):
    want = _module(pattern).split(".")
    return key.split(".")[: len(want)] == want


def r_escaped_regex(key, pattern):
    return bool(re.fullmatch(re.escape(_module(pattern)) + r"(?:\..*)?", key, flags=re.DOTALL))


def r_partition(key, pattern):
    name = pattern.removesuffix(".")
    if not key.startswith(name):
        return False
    rest = key[len(name):]
    return rest == "" or rest.startswith(".")


WRONG = {
    "plain str.startswith(pattern)": (w_plain_startswith,),
    "startswith(pattern + '.') (double dot, no exact key)": (w_startswith_with_dot_only,),
    "regex without re.escape": (w_unescaped_regex,),
    "returns the match object": (w_returns_match_object,),
    "module anywhere in the key": (w_anywhere_in_key,),
    "case-insensitive": (w_case_insensitive,),
    "first piece only": (w_first_piece_only,),
    "forgets key == module": (w_forgets_equal,),
    "returns 1/0": (w_returns_int,),
    "rstrip('.') then startswith": (w_rstrip_then_startswith,),
}
RIGHT = {"compare dot pieces": (r_split_pieces,), "escaped fullmatch": (r_escaped_regex,), "removesuffix + rest": (r_partition,)}

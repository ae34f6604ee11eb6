"""Exercise 8.1: pin_policy(ref, tags, branches): unpinned, tag, branch, commit or missing."""

import re

# The text: "unpinned" for None or ""; "tag"/"branch" when that collection holds the ref as a whole name; "commit"
# for a ref in neither that is 7 to 40 lower-case hex digits; "missing" otherwise; a str; collections unchanged.

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_regex_prefix(ref, tags, branches):
    # re.match without an end anchor: a 64-digit SHA-256 or "abc1234-dirty" passes as a commit
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    return "commit" if re.match(r"[0-9a-f]{7,40}", ref) else "missing"


def w_dollar_newline(ref, tags, branches):
    # "$" also matches before a final newline: "abc1234\n" passes as a commit
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    return "commit" if re.match(r"^[0-9a-f]{7,40}$", ref) else "missing"


def w_upper_hex(ref, tags, branches):
    # accepts upper-case hex digits: the text says lower-case
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-fA-F]{7,40}", ref) else "missing"


def w_int_parse(ref, tags, branches):
    # int(ref, 16) accepts "0x", a sign, blanks and underscores
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    try:
        int(ref, 16)
    except ValueError:
        return "missing"
    return "commit" if 7 <= len(ref) <= 40 else "missing"


def w_isdigit(ref, tags, branches):
    # str.isdigit accepts other scripts' digits (Arabic-Indic, full-width)
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    ok = all(ch.isdigit() or ch in "abcdef" for ch in ref)
    return "commit" if ok and 7 <= len(ref) <= 40 else "missing"


def w_sha256_too(ref, tags, branches):
    # lengths up to 64 (SHA-256): the text says 7 to 40
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-f]{7,64}", ref) else "missing"


def w_prefix_of_tag(ref, tags, branches):
    # a ref that a tag starts with counts as that tag: "v1.2" is not "v1.2.3"
    if not ref:
        return "unpinned"
    if any(t.startswith(ref) for t in tags):
        return "tag"
    if any(b.startswith(ref) for b in branches):
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-f]{7,40}", ref) else "missing"


def w_case_insensitive(ref, tags, branches):
    # compares names case-insensitively: "Main" is not "main"
    if not ref:
        return "unpinned"
    if ref.lower() in {t.lower() for t in tags}:
        return "tag"
    if ref.lower() in {b.lower() for b in branches}:
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-f]{7,40}", ref) else "missing"


def w_strips(ref, tags, branches):
    # strips blanks: " main" is not a name the repository holds, and a blank ref is a ref, not unpinned
    ref = ref.strip() if ref else ref
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-f]{7,40}", ref) else "missing"


def w_hash_before_names(ref, tags, branches):
    # tests the hash shape first: a tag or branch named with hex digits comes out "commit"
    if not ref:
        return "unpinned"
    if re.fullmatch(r"[0-9a-f]{7,40}", ref):
        return "commit"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    return "missing"


def w_last_path_part(ref, tags, branches):
    # compares the last part of a path: "origin/main" is not the branch "main"
    if not ref:
        return "unpinned"
    name = ref.split("/")[-1]
    if name in {t.split("/")[-1] for t in tags}:
        return "tag"
    if name in {b.split("/")[-1] for b in branches}:
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-f]{7,40}", ref) else "missing"


def w_sorts_caller(ref, tags, branches):
    # sorts the caller's collections to bisect them: changes a list, fails on a set or tuple
    if not ref:
        return "unpinned"
    tags.sort()
    branches.sort()
    if ref in tags:
        return "tag"
    if ref in branches:
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-f]{7,40}", ref) else "missing"


def w_min_length_8(ref, tags, branches):
    # off by one: 8 to 40 digits (git's short hash is 7)
    if not ref:
        return "unpinned"
    if ref in set(tags):
        return "tag"
    if ref in set(branches):
        return "branch"
    return "commit" if re.fullmatch(r"[0-9a-f]{8,40}", ref) else "missing"


# --- RIGHT -----------------------------------------------------------------------------------------------------------

_HEX = frozenset("0123456789abcdef")


def r_fullmatch(ref, tags, branches):
    # re.fullmatch with ASCII digits only; membership tested on the collections as given
    if ref is None or ref == "":
        return "unpinned"
    if any(ref == t for t in tags):
        return "tag"
    if any(ref == b for b in branches):
        return "branch"
    if re.fullmatch(r"[0-9a-f]{7,40}", ref, flags=re.ASCII):
        return "commit"
    return "missing"


def r_char_set(ref, tags, branches):
    # frozenset of the sixteen digits; length checked apart
    if not ref:
        return "unpinned"
    for word, names in (("tag", tags), ("branch", branches)):
        if ref in frozenset(names):
            return word
    return "commit" if 7 <= len(ref) <= 40 and set(ref) <= _HEX else "missing"


def r_table(ref, tags, branches):
    # a dict of name -> kind, then the hash rule with isascii
    if ref in (None, ""):
        return "unpinned"
    kinds = {name: "branch" for name in branches}
    kinds.update({name: "tag" for name in tags})
    if ref in kinds:
        return kinds[ref]
    hexish = ref.isascii() and all(c in "0123456789abcdef" for c in ref)
    return "commit" if hexish and len(ref) in range(7, 41) else "missing"


WRONG = {
    "re.match without end anchor": (w_regex_prefix,),
    "$ before a newline": (w_dollar_newline,),
    "upper-case hex": (w_upper_hex,),
    "int(ref, 16)": (w_int_parse,),
    "isdigit (other scripts)": (w_isdigit,),
    "SHA-256 lengths": (w_sha256_too,),
    "prefix of a tag": (w_prefix_of_tag,),
    "case-insensitive names": (w_case_insensitive,),
    "strips blanks": (w_strips,),
    "hash shape before names": (w_hash_before_names,),
    "last path part": (w_last_path_part,),
    "sorts the caller's collections": (w_sorts_caller,),
    "8 to 40 digits": (w_min_length_8,),
}

RIGHT = {
    "fullmatch ASCII": (r_fullmatch,),
    "frozenset digits": (r_char_set,),
    "name table": (r_table,),
}

UNSURE = {}

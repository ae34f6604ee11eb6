"""Exercise 6.1: parse_modules(value), held-out answers."""

import re


# WRONG ---------------------------------------------------------------
def w_no_strip(value):
    # keeps the blanks around names: " b" is not "b"
    return [p for p in value.split(",") if p]


def w_keeps_empty(value):
    # keeps empty entries: "a," gives ["a", ""]
    return [p.strip() for p in value.split(",")]


def w_filter_before_strip(value):
    # drops empty entries before stripping: a blank entry " " becomes ""
    return [p.strip() for p in value.split(",") if p]


def w_split_on_blanks(value):
    # splits on blanks too: a blank inside an entry must stay in it
    return [p for p in re.split(r"[,\s]+", value) if p]


def w_remove_inner_blanks(value):
    # removes every blank, inside entries too
    return [p for p in value.replace(" ", "").replace("\t", "").split(",") if p]


def w_spaces_only(value):
    # strips spaces but not tabs
    return [p.strip(" ") for p in value.split(",") if p.strip(" ")]


def w_dedupe(value):
    # drops a name written twice (and loses the order through a set)
    return sorted({p.strip() for p in value.split(",") if p.strip()})


def w_split_comma_space(value):
    # splits on ", " only: "a,b" stays one entry
    return [p.strip() for p in value.split(", ") if p.strip()]


def w_lower(value):
    # lower-cases the names: capitals must be kept as written
    return [p.strip().lower() for p in value.split(",") if p.strip()]


def w_semicolon_too(value):
    # also splits on semicolons: only a comma separates
    return [p.strip() for p in re.split(r"[,;]", value) if p.strip()]


def w_map_object(value):
    # returns a lazy filter object, not a list
    return filter(None, (p.strip() for p in value.split(",")))


# RIGHT ---------------------------------------------------------------
def r_loop(value):
    names = []
    for piece in value.split(","):
        piece = piece.strip(" \t")
        if piece:
            names.append(piece)
    return names


def r_regex_findall(value):
    return [m.strip(" \t") for m in re.findall(r"[^,]+", value) if m.strip(" \t")]


def r_tuple_walrus(value):
    return tuple(name for raw in value.split(",") if (name := raw.strip()))


WRONG = {
    "no strip": (w_no_strip,),
    "empty entries kept": (w_keeps_empty,),
    "filter before strip": (w_filter_before_strip,),
    "splits on blanks": (w_split_on_blanks,),
    "inner blanks removed": (w_remove_inner_blanks,),
    "spaces only, not tabs": (w_spaces_only,),
    "deduplicated and sorted": (w_dedupe,),
    "split on ', '": (w_split_comma_space,),
    "lower-cased": (w_lower,),
    "semicolon separates": (w_semicolon_too,),
    "filter object": (w_map_object,),
}
RIGHT = {
    "loop with strip(' \\t')": (r_loop,),
    "regex findall": (r_regex_findall,),
    "tuple with walrus": (r_tuple_walrus,),
}
UNSURE = {}

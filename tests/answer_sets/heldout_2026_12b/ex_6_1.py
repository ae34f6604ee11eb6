"""Exercise 6.1: parse_modules(value), the forgiving parser of VERL_USE_EXTERNAL_MODULES."""

import re

# The text: names between commas, blanks (spaces, tabs) around each stripped, empty entries dropped, the empty value
# names none; only a comma separates, a blank inside an entry stays; in order; a list of str (a tuple passes).

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_split_only(value):
    # no stripping: "a, b" gives " b"
    return value.split(",")


def w_keeps_empty(value):
    # strips but keeps empty entries: "a," gives ["a", ""]
    return [part.strip() for part in value.split(",")]


def w_split_blanks(value):
    # splits on blanks too: a blank inside an entry separates it
    return [p for p in re.split(r"[,\s]+", value) if p]


def w_spaces_only(value):
    # strips spaces but not tabs
    return [p.strip(" ") for p in value.split(",") if p.strip(" ")]


def w_remove_all_blanks(value):
    # removes every blank, inner ones too: "bad name" becomes "badname"
    return [p for p in value.replace(" ", "").replace("\t", "").split(",") if p]


def w_dedupe(value):
    # drops a name written twice
    return list(dict.fromkeys(p.strip() for p in value.split(",") if p.strip()))


def w_sorted(value):
    # sorts the names: the order written is lost
    return sorted(p.strip() for p in value.split(",") if p.strip())


def w_lower(value):
    # lower-cases the names: capitals must be kept
    return [p.strip().lower() for p in value.split(",") if p.strip()]


def w_semicolon(value):
    # a semicolon separates too; only a comma does
    return [p.strip() for p in re.split(r"[,;]", value) if p.strip()]


def w_trailing_only(value):
    # drops only a trailing comma's empty entry: ",,a" or "a,,b" keep empties
    return [p.strip() for p in value.strip().rstrip(",").split(",")] if value.strip() else []


def w_map(value):
    # returns a lazy filter object, not a list or tuple
    return filter(None, map(str.strip, value.split(",")))


def w_empty_value(value):
    # the empty value gives [""], not []
    return [p.strip() for p in value.split(",") if p.strip()] or [""]


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_regex_split(value):
    # re.split on the comma, then strip spaces and tabs only
    return [entry.strip(" \t") for entry in re.split(",", value) if entry.strip(" \t")]


def r_char_loop(value):
    # one character at a time, an entry ends at each comma
    names, current = [], ""
    for ch in value + ",":
        if ch == ",":
            name = current.strip(" \t")
            if name:
                names.append(name)
            current = ""
        else:
            current += ch
    return names


def r_filter_tuple(value):
    # filter(None, ...) drops the empty strings; a tuple passes
    return tuple(filter(None, (part.strip(" \t") for part in value.split(","))))


WRONG = {
    "split only": (w_split_only,),
    "keeps empty entries": (w_keeps_empty,),
    "blanks separate": (w_split_blanks,),
    "spaces only, not tabs": (w_spaces_only,),
    "inner blanks removed": (w_remove_all_blanks,),
    "duplicates dropped": (w_dedupe,),
    "sorted": (w_sorted,),
    "lower-cased": (w_lower,),
    "semicolon separates": (w_semicolon,),
    "only a trailing comma handled": (w_trailing_only,),
    "lazy filter object": (w_map,),
    "empty value gives ['']": (w_empty_value,),
}

RIGHT = {
    "re.split, strip space and tab": (r_regex_split,),
    "character loop": (r_char_loop,),
    "filter(None), a tuple": (r_filter_tuple,),
}

UNSURE = {}

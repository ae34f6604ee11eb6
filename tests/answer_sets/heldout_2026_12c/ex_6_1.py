"""Exercise 6.1 answers: parse_modules(value) -> names between commas, blanks around them removed, empties dropped."""

import re


# --- wrong ---
def w_split_only(value):
    # verl's own split: keeps blanks and empty entries
    return value.split(",")


def w_no_strip(value):
    # drops empty entries but keeps the blanks around names
    return [p for p in value.split(",") if p]


def w_strip_spaces_only(value):
    # strips spaces but not tabs
    return [p.strip(" ") for p in value.split(",") if p.strip(" ")]


def w_split_on_whitespace_too(value):
    # splits on blanks as well: a blank inside an entry splits it
    return [p for p in re.split(r"[,\s]+", value) if p]


def w_removes_inner_blanks(value):
    # deletes every blank, also inside an entry: the bad entry is no longer named as written
    return [p.replace(" ", "").replace("\t", "") for p in value.split(",") if p.strip()]


def w_dedupes_sorted(value):
    # a sorted set: order and repeats are not kept
    return sorted({p.strip() for p in value.split(",") if p.strip()})


def w_lowercases(value):
    # lower-cases names: capitals are kept as written
    return [p.strip().lower() for p in value.split(",") if p.strip()]


def w_empty_value_gives_empty_name(value):
    # the empty value gives [''] (str.split on "" gives one entry)
    parts = [p.strip() for p in value.split(",")]
    return parts if value == "" else [p for p in parts if p]


def w_semicolon_separates(value):
    # also splits on semicolons: only a comma separates
    return [p.strip() for p in re.split(r"[,;]", value) if p.strip()]


def w_keeps_blank_entries(value):
    # strips but keeps entries that were blank: they become ''
    return [p.strip() for p in value.split(",") if p]


def w_drops_trailing_only(value):
    # drops only a trailing empty entry: ",a" and "a,,b" keep their empties
    parts = [p.strip() for p in value.split(",")]
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def w_returns_string(value):
    # rejoins the names: a str, not a list of str
    return ",".join(p.strip() for p in value.split(",") if p.strip())


# --- right ---
def r_regex_findall(value):
    return [m.strip(" \t") for m in re.findall(r"[^,]+", value) if m.strip(" \t")]


def r_loop_append(value):
    names = []
    current = ""
    for ch in value + ",":
        if ch == ",":
            entry = current.strip(" \t")
            if entry:
                names.append(entry)
            current = ""
        else:
            current += ch
    return names


def r_tuple_filter(value):
    return tuple(filter(None, (part.strip() for part in value.split(","))))


# --- unsure ---
def u_strip_all_whitespace(value):
    # str.strip() also removes newlines and other Unicode blanks; the text names spaces and tabs only, so an
    # entry ending in a newline (not in the stated domain) would differ
    return [p.strip() for p in value.split(",") if p.strip()]


WRONG = {
    "split only": (w_split_only,),
    "no strip": (w_no_strip,),
    "spaces only, not tabs": (w_strip_spaces_only,),
    "splits on blanks too": (w_split_on_whitespace_too,),
    "inner blanks removed": (w_removes_inner_blanks,),
    "sorted set": (w_dedupes_sorted,),
    "lower-cased": (w_lowercases,),
    "empty value gives ['']": (w_empty_value_gives_empty_name,),
    "semicolon separates": (w_semicolon_separates,),
    "blank entries kept as ''": (w_keeps_blank_entries,),
    "only a trailing empty dropped": (w_drops_trailing_only,),
    "joined string": (w_returns_string,),
}
RIGHT = {
    "regex findall": (r_regex_findall,),
    "character loop": (r_loop_append,),
    "tuple via filter": (r_tuple_filter,),
}
UNSURE = {
    "str.strip() of all whitespace": (u_strip_all_whitespace,),
}

"""Exercise 0.2: find_unstable(text), the fragments of a line that change between runs."""

import re

ADDRESS = r"0x[0-9a-fA-F]{6,}"
DURATION = r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)\b"
DATE = r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?"
PATH = r"/tmp/[\w./-]+"
PID = r"\bpid \d+"
PORT = r"(?:127\.0\.0\.1|localhost):\d+"


def _all(patterns, text):
    return [m.group(0) for p in patterns for m in re.finditer(p, text)]


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_short_address(text):
    # 0x and 4+ digits: the text says at least 6, so "0x1234" (a look-alike) is wrongly named
    return _all([r"0x[0-9a-fA-F]{4,}", DURATION, DATE, PATH, PID, PORT], text)


def w_lowercase_address(text):
    # only lowercase hex digits: the text says lowercase or uppercase
    return _all([r"0x[0-9a-f]{6,}", DURATION, DATE, PATH, PID, PORT], text)


def w_duration_no_word_end(text):
    # no word boundary after the unit: "3 steps" yields "3 s"
    return _all([ADDRESS, r"\d+(?:\.\d+)?\s?(?:s|ms|us)", DATE, PATH, PID, PORT], text)


def w_duration_no_decimals(text):
    # integer durations only: "0.42 s" yields "42 s", not the whole match
    return _all([ADDRESS, r"\b\d+\s?(?:s|ms|us)\b", DATE, PATH, PID, PORT], text)


def w_duration_no_us(text):
    # forgets the microsecond unit the text lists
    return _all([ADDRESS, r"\b\d+(?:\.\d+)?\s?(?:s|ms)\b", DATE, PATH, PID, PORT], text)


def w_date_without_time(text):
    # drops the optional THH:MM: "2026-12-06T19:55" yields only the date
    return _all([ADDRESS, DURATION, r"\b\d{4}-\d\d-\d\d", PATH, PID, PORT], text)


def w_path_first_piece(text):
    # \w+ stops at the first "/" or ".": "/tmp/run1/out.pt" yields "/tmp/run1"
    return _all([ADDRESS, DURATION, DATE, r"/tmp/\w+", PID, PORT], text)


def w_pid_digits_only(text):
    # returns the digits, not "pid" and its digits as the whole fragment
    return _all([ADDRESS, DURATION, DATE, PATH, r"(?<=\bpid )\d+", PORT], text)


def w_port_localhost_only(text):
    # forgets 127.0.0.1
    return _all([ADDRESS, DURATION, DATE, PATH, PID, r"localhost:\d+"], text)


def w_port_digits_only(text):
    # returns the port number alone, not the host and its port
    return _all([ADDRESS, DURATION, DATE, PATH, PID, r"(?<=127\.0\.0\.1:)\d+|(?<=localhost:)\d+"], text)


def w_each_twice(text):
    # runs the scan twice and concatenates: each fragment named more often than it occurs
    found = _all([ADDRESS, DURATION, DATE, PATH, PID, PORT], text)
    return found + found


def w_generator(text):
    # returns a generator, not a list, tuple or set
    return (m.group(0) for p in [ADDRESS, DURATION, DATE, PATH, PID, PORT] for m in re.finditer(p, text))


def w_groups_only(text):
    # re.findall with a capturing group returns the group (the unit), not the whole match
    out = []
    for p in [ADDRESS, r"\b\d+(?:\.\d+)?\s?(s|ms|us)\b", DATE, PATH, PID, PORT]:
        out.extend(re.findall(p, text))
    return out


# --- RIGHT -----------------------------------------------------------------------------------------------------------

_KINDS = [
    re.compile(r"0[x][0-9A-Fa-f]{6,}"),
    re.compile(r"\b[0-9]+(?:[.][0-9]+)?[ ]?(?:ms|us|s)\b"),
    re.compile(r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2})?"),
    re.compile(r"/tmp/[A-Za-z0-9_./-]+"),
    re.compile(r"\bpid [0-9]+"),
    re.compile(r"(?:localhost|127[.]0[.]0[.]1):[0-9]+"),
]


def r_compiled_set(text):
    # compiled patterns, character classes instead of \d, a set (named once each)
    return {m.group() for kind in _KINDS for m in kind.finditer(text)}


def r_findall_tuple(text):
    # re.findall with non-capturing groups only returns whole matches; a tuple
    found = []
    for kind in _KINDS:
        found += kind.findall(text)
    return tuple(found)


def r_span_slices(text):
    # collects spans, then slices the text, sorted by position
    spans = sorted(m.span() for kind in _KINDS for m in kind.finditer(text))
    return [text[a:b] for a, b in spans]


WRONG = {
    "address with 4+ digits": (w_short_address,),
    "address lowercase only": (w_lowercase_address,),
    "duration without word end ('3 steps')": (w_duration_no_word_end,),
    "duration without decimals": (w_duration_no_decimals,),
    "duration forgets us": (w_duration_no_us,),
    "date without THH:MM": (w_date_without_time,),
    "path stops at first piece": (w_path_first_piece,),
    "pid digits only": (w_pid_digits_only,),
    "port: localhost only": (w_port_localhost_only,),
    "port digits only": (w_port_digits_only,),
    "every fragment twice": (w_each_twice,),
    "returns a generator": (w_generator,),
    "findall with a capturing group": (w_groups_only,),
}

RIGHT = {
    "compiled patterns, a set": (r_compiled_set,),
    "findall, a tuple": (r_findall_tuple,),
    "spans sliced in text order": (r_span_slices,),
}


def u_path_to_blank(text):
    # a path as every non-blank after /tmp/: the contract puts a path only before a space or the line's end,
    # yet a path ending in ")" or "," may be tried; the text leaves a path's end open
    return _all([ADDRESS, DURATION, DATE, r"/tmp/\S+", PID, PORT], text)


UNSURE = {
    "path runs to the next blank": (u_path_to_blank,),
}

"""Exercise 0.2: find_unstable(text), held-out answers."""

import re

_ADDR = r"0x[0-9a-fA-F]{6,}"
_DUR = r"(?<![\w.])\d+(?:\.\d+)? ?(?:ms|us|s)\b"
_DATE = r"\b\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2})?"
_PID = r"\bpid \d+"
_PORT = r"(?:127\.0\.0\.1|localhost):\d+"


# WRONG ---------------------------------------------------------------
def w_lowercase_hex_only(text):
    # addresses may be upper-case hex too
    pats = [r"0x[0-9a-f]{6,}", _DUR, _DATE, r"/tmp/[\w./-]+", _PID, _PORT]
    return [m.group(0) for p in pats for m in re.finditer(p, text)]


def w_any_hex_length(text):
    # 0x with fewer than 6 digits is stable, must give nothing
    pats = [r"0x[0-9a-fA-F]+", _DUR, _DATE, r"/tmp/[\w./-]+", _PID, _PORT]
    return [m.group(0) for p in pats for m in re.finditer(p, text)]


def w_no_word_boundary_duration(text):
    # "3 steps" gives "3 s": the unit must be a whole word
    pats = [_ADDR, r"\d+(?:\.\d+)? ?(?:ms|us|s)", _DATE, r"/tmp/[\w./-]+", _PID, _PORT]
    return [m.group(0) for p in pats for m in re.finditer(p, text)]


def w_no_space_duration(text):
    # misses "3 ms": one space is allowed between number and unit
    pats = [_ADDR, r"\b\d+(?:\.\d+)?(?:ms|us|s)\b", _DATE, r"/tmp/[\w./-]+", _PID, _PORT]
    return [m.group(0) for p in pats for m in re.finditer(p, text)]


def w_date_without_time(text):
    # drops the THH:MM part of a date-time
    pats = [_ADDR, _DUR, r"\b\d{4}-\d{2}-\d{2}", r"/tmp/[\w./-]+", _PID, _PORT]
    return [m.group(0) for p in pats for m in re.finditer(p, text)]


def w_pid_digits_only(text):
    # the fragment is "pid 123", not "123"
    pats = [_ADDR, _DUR, _DATE, r"/tmp/[\w./-]+", r"(?<=pid )\d+", _PORT]
    return [m.group(0) for p in pats for m in re.finditer(p, text)]


def w_port_any_host(text):
    # a port on any host: only 127.0.0.1 or localhost count
    pats = [_ADDR, _DUR, _DATE, r"/tmp/[\w./-]+", _PID, r"[\w.]+:\d+"]
    return [m.group(0) for p in pats for m in re.finditer(p, text)]


def w_first_match_only(text):
    # returns one fragment per kind, though a line may hold several
    pats = [_ADDR, _DUR, _DATE, r"/tmp/[\w./-]+", _PID, _PORT]
    return [m.group(0) for p in pats if (m := re.search(p, text))]


def w_no_port_kind(text):
    # forgets the local port kind
    pats = [_ADDR, _DUR, _DATE, r"/tmp/[\w./-]+", _PID]
    return [m.group(0) for p in pats for m in re.finditer(p, text)]


def w_overlap_duplicates(text):
    # the hex pattern is also run with IGNORECASE on top: a lower-case address is named twice
    pats = [_ADDR, _DUR, _DATE, r"/tmp/[\w./-]+", _PID, _PORT]
    out = [m.group(0) for p in pats for m in re.finditer(p, text)]
    return out + [m.group(0) for m in re.finditer(r"0x[0-9a-f]{6,}", text, re.I)]


# RIGHT ---------------------------------------------------------------
def r_one_alternation(text):
    big = re.compile("|".join(f"(?:{p})" for p in (_ADDR, _PORT, _DATE, _PID, r"/tmp/\S+", _DUR)))
    return {m.group(0) for m in big.finditer(text)}


def r_token_scan(text):
    out = []
    for kind in (_ADDR, _DATE, _PID, _PORT):
        out.extend(re.findall(kind, text))
    out.extend(re.findall(r"(?<![\w.])(\d+(?:\.\d+)? ?(?:ms|us|s))(?![\w])", text))
    out.extend(re.findall(r"/tmp/\S+", text))
    return tuple(out)


def r_kinds_dict(text):
    kinds = {
        "address": re.compile(r"0x[[:xdigit:]]{6,}".replace("[[:xdigit:]]", "[0-9a-fA-F]")),
        "duration": re.compile(_DUR),
        "date": re.compile(_DATE),
        "path": re.compile(r"/tmp/[\w./-]+"),
        "pid": re.compile(_PID),
        "port": re.compile(_PORT),
    }
    result = []
    for pattern in kinds.values():
        for m in pattern.finditer(text):
            result.append(m.group(0))
    return result


WRONG = {
    "lower-case hex only": (w_lowercase_hex_only,),
    "0x with any number of digits": (w_any_hex_length,),
    "duration unit not a whole word": (w_no_word_boundary_duration,),
    "duration without the optional space": (w_no_space_duration,),
    "date without its THH:MM": (w_date_without_time,),
    "pid's digits only": (w_pid_digits_only,),
    "port on any host": (w_port_any_host,),
    "one fragment per kind": (w_first_match_only,),
    "no port kind": (w_no_port_kind,),
    "lower-case address named twice": (w_overlap_duplicates,),
}
RIGHT = {
    "one alternation into a set": (r_one_alternation,),
    "findall per kind into a tuple": (r_token_scan,),
    "dict of compiled patterns": (r_kinds_dict,),
}
UNSURE = {}

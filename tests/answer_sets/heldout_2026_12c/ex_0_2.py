"""Exercise 0.2 answers: find_unstable(text)."""

import re

_ADDR = r"0x[0-9a-fA-F]{6,}"
_DUR = r"\b\d+(?:\.\d+)?\s?(?:s|ms|us)\b"
_DATE = r"\b\d{4}-\d\d-\d\d(?:T\d\d:\d\d)?"
_PATH = r"/tmp/[\w./-]+"
_PID = r"\bpid \d+"
_PORT = r"(?:127\.0\.0\.1|localhost):\d+"


def _all(text, patterns):
    return [m.group(0) for p in patterns for m in re.finditer(p, text)]


# --- wrong ---
def w_lowercase_hex_only(text):
    # addresses may be written in either case; uppercase hex digits are missed
    return _all(text, [r"0x[0-9a-f]{6,}", _DUR, _DATE, _PATH, _PID, _PORT])


def w_any_hex_length(text):
    # 0x with fewer than 6 digits is stable text, not an address
    return _all(text, [r"0x[0-9a-fA-F]+", _DUR, _DATE, _PATH, _PID, _PORT])


def w_duration_no_word_end(text):
    # no word boundary after the unit: "3 steps" gives "3 s"
    return _all(text, [_ADDR, r"\d+(?:\.\d+)?\s?(?:ms|us|s)", _DATE, _PATH, _PID, _PORT])


def w_duration_integers_only(text):
    # forgets decimals: "1.25s" gives "25s"
    return _all(text, [_ADDR, r"\b\d+\s?(?:s|ms|us)\b", _DATE, _PATH, _PID, _PORT])


def w_date_without_time(text):
    # drops the THH:MM part a date may carry: the fragment is not the whole match
    return _all(text, [_ADDR, _DUR, r"\b\d{4}-\d\d-\d\d", _PATH, _PID, _PORT])


def w_pid_digits_only(text):
    # returns the digits, not "pid" and its digits
    return _all(text, [_ADDR, _DUR, _DATE, _PATH, _PORT]) + re.findall(r"\bpid (\d+)", text)


def w_port_digits_only(text):
    # returns ":digits" without the host
    return _all(text, [_ADDR, _DUR, _DATE, _PATH, _PID]) + re.findall(r"(?:127\.0\.0\.1|localhost)(:\d+)", text)


def w_host_without_port(text):
    # a host without a port is stable; this reports it anyway
    return _all(text, [_ADDR, _DUR, _DATE, _PATH, _PID, r"(?:127\.0\.0\.1|localhost)(?::\d+)?"])


def w_forgets_paths(text):
    # forgets one of the six kinds: paths under /tmp/
    return _all(text, [_ADDR, _DUR, _DATE, _PID, _PORT])


def w_first_match_only(text):
    # one fragment per kind: a line with two durations loses one
    out = []
    for p in (_ADDR, _DUR, _DATE, _PATH, _PID, _PORT):
        m = re.search(p, text)
        if m:
            out.append(m.group(0))
    return out


def w_unescaped_dot_port(text):
    # the dot in 127.0.0.1 is unescaped and the port is optional: "localhost" alone is reported
    return _all(text, [_ADDR, _DUR, _DATE, _PATH, _PID, r"(?:127.0.0.1|localhost):?\d*"])


def w_joined_string(text):
    # returns one string joined by spaces, not a collection of fragments
    return " ".join(_all(text, [_ADDR, _DUR, _DATE, _PATH, _PID, _PORT]))


# --- right ---
def r_one_alternation(text):
    combined = "|".join(f"(?:{p})" for p in (_ADDR, _DATE, _DUR, _PATH, _PID, _PORT))
    return {m.group(0) for m in re.finditer(combined, text)}


def r_tuple_per_kind(text):
    kinds = {
        "address": re.compile(r"\b0x[0-9A-Fa-f]{6,}\b"),
        "duration": re.compile(r"(?<![\w.])\d+(?:\.\d+)? ?(?:ms|us|s)(?!\w)"),
        "date": re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2})?"),
        "path": re.compile(r"/tmp/[\w./-]+"),
        "pid": re.compile(r"\bpid [0-9]+"),
        "port": re.compile(r"\b(?:127\.0\.0\.1|localhost):[0-9]+"),
    }
    found = []
    for rx in kinds.values():
        found.extend(rx.findall(text))
    return tuple(found)


def r_token_scan(text):
    # regexes per kind, results collected into a set
    out = set()
    out.update(re.findall(r"0x[0-9a-fA-F]{6,}", text))
    out.update(m.group() for m in re.finditer(r"\b[0-9]+(?:\.[0-9]+)?[ ]?(?:ms|us|s)\b", text))
    out.update(m.group() for m in re.finditer(r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{2}:[0-9]{2})?", text))
    out.update(re.findall(r"/tmp/[A-Za-z0-9_./-]+", text))
    out.update(re.findall(r"\bpid [0-9]+", text))
    out.update(re.findall(r"(?:127\.0\.0\.1|localhost):[0-9]+", text))
    return out


# --- unsure ---
def u_path_stops_before_full_stop(text):
    # a path's end is left open by the text: this one stops before a trailing full stop
    out = _all(text, [_ADDR, _DUR, _DATE, _PID, _PORT])
    out += [p.rstrip(".") for p in re.findall(_PATH, text)]
    return out


WRONG = {
    "lowercase hex only": (w_lowercase_hex_only,),
    "hex of any length": (w_any_hex_length,),
    "duration without word end": (w_duration_no_word_end,),
    "duration integers only": (w_duration_integers_only,),
    "date drops THH:MM": (w_date_without_time,),
    "pid digits only": (w_pid_digits_only,),
    "port digits only": (w_port_digits_only,),
    "host without port reported": (w_host_without_port,),
    "paths forgotten": (w_forgets_paths,),
    "first match per kind only": (w_first_match_only,),
    "port optional, dot unescaped": (w_unescaped_dot_port,),
    "one joined string": (w_joined_string,),
}
RIGHT = {
    "one alternation, set": (r_one_alternation,),
    "compiled per kind, tuple": (r_tuple_per_kind,),
    "findall per kind into a set": (r_token_scan,),
}
UNSURE = {
    "path stripped of a trailing full stop": (u_path_stops_before_full_stop,),
}
